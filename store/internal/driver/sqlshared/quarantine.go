package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Quarantine upserts on the partial unique index of open entries
// (quarantine_open): the conflict target names its columns and its
// predicate.
func (x Exec[D]) Quarantine(ctx context.Context, q driver.Querier, e driver.QuarantineRow, now int64) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO quarantine (consumer, reason, tenant, subject, version, position, event_id, event, error, attempts, evidence, created_at, last_failed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (consumer, tenant, event_id, position) WHERE resolved_at IS NULL
		DO UPDATE SET reason = EXCLUDED.reason, error = EXCLUDED.error, attempts = quarantine.attempts + EXCLUDED.attempts, evidence = EXCLUDED.evidence,
			last_failed_at = EXCLUDED.last_failed_at, retry_requested_at = NULL`),
		e.Consumer, e.Reason, e.Tenant, e.Subject, e.Version, e.Position, e.EventID, e.Event, e.Error, e.Attempts, e.Evidence, now, now)
	return err
}

// ResolveQuarantine updates the open entries that match.
func (x Exec[D]) ResolveQuarantine(ctx context.Context, q driver.Querier, consumer string, position int64, eventID string, now int64) error {
	_, err := q.ExecContext(ctx, x.bind(`UPDATE quarantine SET resolved_at = ?, resolution = 'applied', retry_requested_at = NULL WHERE consumer = ? AND resolved_at IS NULL
		AND ((CAST(? AS bigint) > 0 AND position = ?) OR (CAST(? AS bigint) = 0 AND event_id = ?))`), now, consumer, position, position, position, eventID)
	return err
}

const quarantineColumns = `SELECT id, consumer, reason, tenant, subject, version, position, event_id, event, error, attempts, evidence,
	created_at, COALESCE(resolved_at, 0), COALESCE(last_failed_at, created_at), COALESCE(retry_requested_at, 0), resolution,
	EXISTS (SELECT 1 FROM projections p WHERE p.name = quarantine.consumer)
	FROM quarantine`

func scanQuarantine(rows *sql.Rows, err error) ([]driver.QuarantineRow, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.QuarantineRow
	for rows.Next() {
		var e driver.QuarantineRow
		if err := rows.Scan(&e.ID, &e.Consumer, &e.Reason, &e.Tenant, &e.Subject, &e.Version, &e.Position, &e.EventID, &e.Event,
			&e.Error, &e.Attempts, &e.Evidence, &e.CreatedAt, &e.ResolvedAt, &e.LastFailedAt, &e.RetryRequestedAt, &e.Resolution, &e.Projection); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// QuarantineEntries reads the entries of one consumer or all.
func (x Exec[D]) QuarantineEntries(ctx context.Context, q driver.ReadQuerier, consumer string, open bool) ([]driver.QuarantineRow, error) {
	query := quarantineColumns + ` WHERE (? = '' OR consumer = ?)`
	if open {
		query += ` AND resolved_at IS NULL`
	}
	return scanQuarantine(q.QueryContext(ctx, x.bind(query+` ORDER BY id`), consumer, consumer))
}

// OpenQuarantineEntries reads (and holds) the open entries for one event,
// so that the marks the write transaction then makes decide on rows no
// other transaction changes before it commits.
func (x Exec[D]) OpenQuarantineEntries(ctx context.Context, q driver.ReadQuerier, consumer, eventID string) ([]driver.QuarantineRow, error) {
	return scanQuarantine(q.QueryContext(ctx, x.bind(quarantineColumns+` WHERE consumer = ? AND event_id = ? AND resolved_at IS NULL ORDER BY id`+x.dialect().ForUpdateOf("quarantine")), consumer, eventID))
}

// QuarantineRetries reads the open entries marked for retry.
func (x Exec[D]) QuarantineRetries(ctx context.Context, q driver.ReadQuerier, consumer string) ([]driver.QuarantineRow, error) {
	return scanQuarantine(q.QueryContext(ctx, x.bind(quarantineColumns+` WHERE consumer = ? AND resolved_at IS NULL AND retry_requested_at IS NOT NULL
		ORDER BY position, id`), consumer))
}

// QuarantineNameKnown asks the four tables in one statement.
func (x Exec[D]) QuarantineNameKnown(ctx context.Context, q driver.ReadQuerier, name string) (bool, error) {
	var ok bool
	err := q.QueryRowContext(ctx, x.bind(`SELECT EXISTS (SELECT 1 FROM projections WHERE name = ?)
		OR EXISTS (SELECT 1 FROM quarantine WHERE consumer = ?)
		OR EXISTS (SELECT 1 FROM consumer_stats WHERE consumer = ?)
		OR EXISTS (SELECT 1 FROM checkpoints WHERE name = ?)`), name, name, name, name).Scan(&ok)
	return ok, err
}

// MarkQuarantineRetry updates the open entries for the event.
func (x Exec[D]) MarkQuarantineRetry(ctx context.Context, q driver.Querier, consumer, eventID string, now int64) error {
	_, err := q.ExecContext(ctx, x.bind(`UPDATE quarantine SET retry_requested_at = ? WHERE consumer = ? AND event_id = ? AND resolved_at IS NULL`),
		now, consumer, eventID)
	return err
}

// SkipQuarantine resolves the open entries for the event as skipped.
func (x Exec[D]) SkipQuarantine(ctx context.Context, q driver.Querier, consumer, eventID string, now int64) error {
	_, err := q.ExecContext(ctx, x.bind(`UPDATE quarantine SET resolved_at = ?, resolution = 'skipped', retry_requested_at = NULL
			WHERE consumer = ? AND event_id = ? AND resolved_at IS NULL`), now, consumer, eventID)
	return err
}

// QuarantinedProjectionStatus reads (and holds) the projection's row, so
// that the status the write transaction then sets is decided on a status
// no other transaction changes before it commits.
func (x Exec[D]) QuarantinedProjectionStatus(ctx context.Context, q driver.ReadQuerier, name string) (string, error) {
	var status string
	err := q.QueryRowContext(ctx, x.bind(`SELECT status FROM projections WHERE name = ?`+x.dialect().ForUpdate()), name).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return status, err
}

// ResolveRetry is one conditional update.
func (x Exec[D]) ResolveRetry(ctx context.Context, q driver.Querier, id int64, resolution string, now int64) (bool, error) {
	res, err := q.ExecContext(ctx, x.bind(`UPDATE quarantine SET resolved_at = ?, resolution = ?, retry_requested_at = NULL
		WHERE id = ? AND resolved_at IS NULL AND retry_requested_at IS NOT NULL`), now, resolution, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RetryFailed is one conditional update.
func (x Exec[D]) RetryFailed(ctx context.Context, q driver.Querier, id int64, cause string, now int64) (bool, error) {
	res, err := q.ExecContext(ctx, x.bind(`UPDATE quarantine SET attempts = attempts + 1, error = ?, last_failed_at = ?, retry_requested_at = NULL
		WHERE id = ? AND resolved_at IS NULL AND retry_requested_at IS NOT NULL`), cause, now, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
