package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The scavenge's statements that both engines run alike; the batch's
// positions are in the temporary table Dialect.ScavengeBatch names.

// removableTop is the newest version of stream s (a streams row) that
// is not a restore's eventlite.stream.restored, or its newest when it
// has no other: a restore appends that event above a deleted stream's
// tombstone, and the tombstone must stay. A scavenge's plan
// (ScavengeCandidates) and each batch (RemovableBefore) both stop
// before it, so that a dry run lists what the scavenge then removes.
const removableTop = `(SELECT COALESCE(max(CASE WHEN e.type <> '` + driver.StreamRestoredType + `' THEN e.version END), max(e.version))
			FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id)`

// ScavengeCandidates reads the streams with first_version > 1, each
// with its oldest version and the least of first_version and
// removableTop (first_version when it has no events).
func (x Exec[D]) ScavengeCandidates(ctx context.Context, q driver.ReadQuerier) ([]driver.ScavengeCandidate, error) {
	rows, err := q.QueryContext(ctx, `SELECT s.tenant, s.stream_id,
		(SELECT min(e.version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id),
		`+x.dialect().Least()+`(s.first_version, COALESCE(`+removableTop+`, s.first_version))
		FROM streams s WHERE s.first_version > 1 ORDER BY s.tenant, s.stream_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.ScavengeCandidate
	for rows.Next() {
		var c driver.ScavengeCandidate
		var lo sql.NullInt64
		if err := rows.Scan(&c.Tenant, &c.Stream, &lo, &c.Hi); err != nil {
			return nil, err
		}
		c.Lo, c.HasLo = lo.Int64, lo.Valid
		out = append(out, c)
	}
	return out, rows.Err()
}

// RemovableBefore reads the least of first_version and removableTop.
func (x Exec[D]) RemovableBefore(ctx context.Context, q driver.ReadQuerier, tenant, stream string) (int64, error) {
	var now int64
	err := q.QueryRowContext(ctx, x.bind(`SELECT `+x.dialect().Least()+`(s.first_version, `+removableTop+`)
		FROM streams s WHERE s.tenant = ? AND s.stream_id = ?`), tenant, stream).Scan(&now)
	return now, err
}

// WalkStream reads the stream's events in version order.
func (x Exec[D]) WalkStream(ctx context.Context, q driver.ReadQuerier, tenant, stream string, from, before int64, limit int, fn func(pos, version int64) bool) error {
	rows, err := q.QueryContext(ctx, x.bind(`SELECT e.position, e.version FROM events e
		WHERE e.tenant = ? AND e.stream_id = ? AND e.version >= ? AND e.version < ?
		ORDER BY e.version LIMIT ?`), tenant, stream, from, before, limit)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var pos, version int64
		if err := rows.Scan(&pos, &version); err != nil {
			return err
		}
		if !fn(pos, version) {
			break
		}
	}
	return rows.Err()
}

// RecordRemovedIDs copies the batch's ids into removed_event_ids; the
// events_removed_id trigger refuses them to later inserts.
func (x Exec[D]) RecordRemovedIDs(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, `INSERT INTO removed_event_ids (tenant, event_id)
		SELECT tenant, event_id FROM events WHERE position IN (SELECT position FROM `+x.dialect().ScavengeBatch()+`)`)
	return err
}

// MergeRemovedRange reads the neighbours in removed_ranges, deletes what
// the merged range covers and inserts it. The batch's transaction is the
// writer's, so no other writer touches removed_ranges meanwhile.
func (x Exec[D]) MergeRemovedRange(ctx context.Context, q driver.Querier, rFrom, rTo, at int64) (int64, int64, error) {
	var from, to int64
	err := q.QueryRowContext(ctx, x.bind(`SELECT from_position, to_position FROM removed_ranges WHERE from_position < ? ORDER BY from_position DESC LIMIT 1`), rFrom).Scan(&from, &to)
	switch {
	case err == nil && to >= rFrom-1:
		rFrom = from
		rTo = max(rTo, to)
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return rFrom, rTo, err
	}
	err = q.QueryRowContext(ctx, x.bind(`SELECT to_position FROM removed_ranges WHERE from_position = ?`), rTo+1).Scan(&to)
	switch {
	case err == nil:
		rTo = to
	case !errors.Is(err, sql.ErrNoRows):
		return rFrom, rTo, err
	}
	if _, err := q.ExecContext(ctx, x.bind(`DELETE FROM removed_ranges WHERE from_position BETWEEN ? AND ?`), rFrom, rTo); err != nil {
		return rFrom, rTo, err
	}
	_, err = q.ExecContext(ctx, x.bind(`INSERT INTO removed_ranges (from_position, to_position, removed_at) VALUES (?, ?, ?)`), rFrom, rTo, at)
	return rFrom, rTo, err
}

// DeleteBatchOutbox deletes the batch's outbox rows.
func (x Exec[D]) DeleteBatchOutbox(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, `DELETE FROM outbox WHERE position IN (SELECT position FROM `+x.dialect().ScavengeBatch()+`)`)
	return err
}

// IDRemoved looks removed_event_ids up.
func (x Exec[D]) IDRemoved(ctx context.Context, q driver.ReadQuerier, tenant, id string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, x.bind(`SELECT 1 FROM removed_event_ids WHERE tenant = ? AND event_id = ?`), tenant, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// OldestVersion reads the stream's lowest version by its index.
func (x Exec[D]) OldestVersion(ctx context.Context, q driver.ReadQuerier, tenant, stream string) (int64, error) {
	var lo int64
	err := q.QueryRowContext(ctx, x.bind(`SELECT version FROM events WHERE tenant = ? AND stream_id = ? ORDER BY version LIMIT 1`), tenant, stream).Scan(&lo)
	return lo, err
}

// OutboxSettled reads outbox_watermark.settled and the oldest unsettled
// event above it.
func (x Exec[D]) OutboxSettled(ctx context.Context, q driver.ReadQuerier) (settled, pending int64, err error) {
	err = q.QueryRowContext(ctx, `SELECT w.settled, COALESCE((SELECT e.position FROM events e `+x.dialect().OutboxRowOf()+`
		WHERE e.position > w.settled AND `+Unsettled+` ORDER BY e.position LIMIT 1), 0) FROM outbox_watermark w`).Scan(&settled, &pending)
	return settled, pending, err
}
