package sqlshared

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Check is one invariant's count query: how many rows break it.
type Check struct {
	Inv   driver.Invariant
	Query string
}

// The checks both engines run alike. A driver puts them in its list with
// its own, as its schema has the tables they read.
const (
	CheckStreamsHaveEvents = `SELECT count(*) FROM streams s
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)`
	CheckEventsHaveStream = `SELECT count(*) FROM events e
		WHERE NOT EXISTS (SELECT 1 FROM streams s WHERE s.tenant = e.tenant AND s.stream_id = e.stream_id)`
	CheckOutboxRowsHaveEvent = `SELECT count(*) FROM outbox o
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.position = o.position)`
	CheckPositionsFollowVersions = `SELECT count(*) FROM events a
		JOIN events b ON b.tenant = a.tenant AND b.stream_id = a.stream_id AND b.version = a.version + 1
		WHERE b.position <= a.position`
	// CheckTombstonesLast takes the tombstone's type as its parameter.
	CheckTombstonesLast = `SELECT count(*) FROM streams s
		WHERE s.deleted <> 0 AND NOT EXISTS (SELECT 1 FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id
			AND e.version = (SELECT max(version) FROM events n WHERE n.tenant = s.tenant AND n.stream_id = s.stream_id
				AND n.type <> '` + driver.StreamRestoredType + `') AND e.type = ?)`
	CheckFirstVersionsInRange = `SELECT count(*) FROM streams s
		WHERE s.first_version < 1
			OR s.first_version > COALESCE((SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0) + 1`
	CheckRemovedIDsGone = `SELECT count(*) FROM removed_event_ids r
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.tenant = r.tenant AND e.event_id = r.event_id)`
	CheckRemovedPositionsGone = `SELECT count(*) FROM removed_ranges r
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.position BETWEEN r.from_position AND r.to_position)`
	CheckWatermarkOneRow       = `SELECT abs(count(*) - 1) FROM outbox_watermark`
	CheckSettledBelowWatermark = `SELECT count(*) FROM events e
		WHERE e.position <= (SELECT settled FROM outbox_watermark)
		AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.position = e.position AND (o.published_at IS NOT NULL OR o.discarded_at IS NOT NULL))`
	CheckPendingBelowCursorBlocked = `SELECT count(*) FROM events e
		LEFT JOIN outbox o ON o.position = e.position
		WHERE e.position > (SELECT settled FROM outbox_watermark) AND e.position <= (SELECT scanned FROM outbox_watermark) AND ` + Unsettled + `
		AND NOT EXISTS (SELECT 1 FROM outbox f JOIN events x ON x.position = f.position
			WHERE ` + FailingRow + ` AND x.tenant = e.tenant AND x.stream_id = e.stream_id AND f.position <= e.position)`
)

// FailingRow holds for an outbox row f that failed and is still pending
// (the outbox_failing index).
const FailingRow = `f.published_at IS NULL AND f.discarded_at IS NULL AND f.attempts > 0`

// CheckWatermarkNotAhead is the check that the outbox's marks are not
// past the log, in the engine's spelling of the scalar maximum.
func (x Exec[D]) CheckWatermarkNotAhead() string {
	g := x.dialect().Greatest()
	return `SELECT count(*) FROM outbox_watermark
		WHERE ` + g + `(settled, scanned) > ` + g + `(COALESCE((SELECT max(position) FROM events), 0),
			COALESCE((SELECT max(to_position) FROM removed_ranges), 0))`
}

// RunChecks runs one count per check, in order; the tombstone check
// takes tombstoneType.
func (x Exec[D]) RunChecks(ctx context.Context, q driver.ReadQuerier, checks []Check, tombstoneType string) ([]driver.Violations, error) {
	out := make([]driver.Violations, 0, len(checks))
	for _, c := range checks {
		var args []any
		if c.Inv == driver.TombstonesLast {
			args = []any{tombstoneType}
		}
		var n int64
		if err := q.QueryRowContext(ctx, x.bind(c.Query), args...).Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, driver.Violations{Invariant: c.Inv, Count: n})
	}
	return out, nil
}
