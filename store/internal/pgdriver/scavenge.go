package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// ScavengeCandidates reads the streams with first_version > 1.
func (Exec) ScavengeCandidates(ctx context.Context, q driver.ReadQuerier) ([]driver.ScavengeCandidate, error) {
	rows, err := q.QueryContext(ctx, `SELECT s.tenant, s.stream_id, m.lo, LEAST(s.first_version, m.hi)
		FROM streams s CROSS JOIN LATERAL (SELECT min(version) AS lo, max(version) AS hi FROM events e
			WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id) m
		WHERE s.first_version > 1 ORDER BY s.tenant, s.stream_id`)
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

// OldestVersion reads min(version); no events is sql.ErrNoRows.
func (Exec) OldestVersion(ctx context.Context, q driver.ReadQuerier, tenant, stream string) (int64, error) {
	var lo int64
	err := q.QueryRowContext(ctx, `SELECT version FROM events WHERE tenant = $1 AND stream_id = $2 ORDER BY version LIMIT 1`, tenant, stream).Scan(&lo)
	return lo, err
}

// RemovableBefore reads LEAST(first_version, newest version).
func (Exec) RemovableBefore(ctx context.Context, q driver.ReadQuerier, tenant, stream string) (int64, error) {
	var now int64
	err := q.QueryRowContext(ctx, `SELECT LEAST(s.first_version, (SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id))
		FROM streams s WHERE s.tenant = $1 AND s.stream_id = $2`, tenant, stream).Scan(&now)
	return now, err
}

// LowestReader reads checkpoints, projections and rebuilds in one
// statement.
func (Exec) LowestReader(ctx context.Context, q driver.ReadQuerier) (by, name string, pos int64, ok bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT r.by, r.name, r.position FROM (
		SELECT 'projection' AS by, name, position FROM checkpoints
		UNION ALL SELECT 'projection', p.name, 0 FROM projections p WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.name = p.name)
		UNION ALL SELECT 'rebuild', projection, checkpoint FROM rebuilds) r
		ORDER BY r.position, r.by COLLATE "C", r.name LIMIT 1`).Scan(&by, &name, &pos)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", 0, false, nil
	}
	return by, name, pos, err == nil, err
}

// OutboxSettled reads outbox_watermark.settled and the oldest event above
// it that is neither published nor discarded (without an outbox row, or
// with one that is neither).
func (Exec) OutboxSettled(ctx context.Context, q driver.ReadQuerier) (settled, pending int64, err error) {
	// outboxRowOf looks each event's row up by its key: a plain join
	// makes PostgreSQL walk the outbox from its first row.
	err = q.QueryRowContext(ctx, `SELECT w.settled, COALESCE((SELECT e.position FROM events e `+outboxRowOf+`
		WHERE e.position > w.settled AND `+Unsettled+`
		ORDER BY e.position LIMIT 1), 0) FROM outbox_watermark w`).Scan(&settled, &pending)
	return settled, pending, err
}

// WalkStream reads the stream's events in version order.
func (Exec) WalkStream(ctx context.Context, q driver.ReadQuerier, tenant, stream string, from, before int64, limit int, fn func(pos, version int64) bool) error {
	rows, err := q.QueryContext(ctx, `SELECT e.position, e.version FROM events e
		WHERE e.tenant = $1 AND e.stream_id = $2 AND e.version >= $3 AND e.version < $4
		ORDER BY e.version LIMIT $5`, tenant, stream, from, before, limit)
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

// LoadScavengeBatch fills pg_temp.scavenge_batch, a temporary table of
// the writer's session (created by the first batch, emptied by each).
func (Exec) LoadScavengeBatch(ctx context.Context, q driver.Querier, positions []int64) error {
	if _, err := q.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS scavenge_batch (position BIGINT PRIMARY KEY)`); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM pg_temp.scavenge_batch`); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, `INSERT INTO pg_temp.scavenge_batch (position) SELECT unnest($1::bigint[])`, positions)
	return err
}

// RecordRemovedIDs copies the batch's ids into removed_event_ids; the
// events_removed_id trigger refuses them to later inserts.
func (Exec) RecordRemovedIDs(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, `INSERT INTO removed_event_ids (tenant, event_id)
		SELECT tenant, event_id FROM events WHERE position IN (SELECT position FROM pg_temp.scavenge_batch)`)
	return err
}

// RaisePositionFloor raises log_head.position, PostgreSQL's position
// floor, to the highest stored position; it never lowers it. Appends move
// it already, so it is there: the statement keeps the guarantee explicit.
func (Exec) RaisePositionFloor(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, `UPDATE log_head SET position = GREATEST(position, (SELECT COALESCE(max(position), 0) FROM events))`)
	return err
}

// MergeRemovedRange reads the neighbours in removed_ranges, deletes what
// the merged range covers and inserts it. The batch's transaction holds
// the head row lock, so no other writer touches removed_ranges meanwhile.
func (Exec) MergeRemovedRange(ctx context.Context, q driver.Querier, rFrom, rTo, at int64) (int64, int64, error) {
	var from, to int64
	err := q.QueryRowContext(ctx, `SELECT from_position, to_position FROM removed_ranges WHERE from_position < $1 ORDER BY from_position DESC LIMIT 1`, rFrom).Scan(&from, &to)
	switch {
	case err == nil && to >= rFrom-1:
		rFrom = from
		rTo = max(rTo, to)
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return rFrom, rTo, err
	}
	err = q.QueryRowContext(ctx, `SELECT to_position FROM removed_ranges WHERE from_position = $1`, rTo+1).Scan(&to)
	switch {
	case err == nil:
		rTo = to
	case !errors.Is(err, sql.ErrNoRows):
		return rFrom, rTo, err
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM removed_ranges WHERE from_position BETWEEN $1 AND $2`, rFrom, rTo); err != nil {
		return rFrom, rTo, err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO removed_ranges (from_position, to_position, removed_at) VALUES ($1, $2, $3)`, rFrom, rTo, at)
	return rFrom, rTo, err
}

// DeleteBatchOutbox deletes the batch's outbox rows.
func (Exec) DeleteBatchOutbox(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, `DELETE FROM outbox WHERE position IN (SELECT position FROM pg_temp.scavenge_batch)`)
	return err
}

// DeleteBatchEvents deletes the batch's events.
func (Exec) DeleteBatchEvents(ctx context.Context, q driver.Querier) (int64, error) {
	// Their tag index rows first, found by the tags the events store.
	if err := driver.DeleteTagRowsOf(ctx, q, true, `SELECT tenant, position, extensions::json ->> '`+envelope.ExtTags+`' FROM events
		WHERE position IN (SELECT position FROM pg_temp.scavenge_batch) AND extensions IS NOT NULL
		AND json_typeof(extensions::json -> '`+envelope.ExtTags+`') = 'string'`); err != nil {
		return 0, err
	}
	res, err := q.ExecContext(ctx, `DELETE FROM events WHERE position IN (SELECT position FROM pg_temp.scavenge_batch)`)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// IDRemoved looks removed_event_ids up.
func (Exec) IDRemoved(ctx context.Context, q driver.ReadQuerier, tenant, id string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM removed_event_ids WHERE tenant = $1 AND event_id = $2`, tenant, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// The Space methods are SQLite's file management. PostgreSQL keeps its
// own files: it cannot be told to overwrite deleted rows, its autovacuum
// makes their space reusable, and its write-ahead log is the server's.
// Each answers as the interface says an engine without it does; the
// store refuses a scavenge's full vacuum on PostgreSQL before it starts.

// SetSecureDelete does nothing: PostgreSQL cannot overwrite deleted rows.
func (Exec) SetSecureDelete(context.Context, driver.Querier, bool) error { return nil }

// IncrementalVacuumOn is false: autovacuum reclaims space by itself.
func (Exec) IncrementalVacuumOn(context.Context, driver.Querier) (bool, error) { return false, nil }

// IncrementalVacuum does nothing (see IncrementalVacuumOn).
func (Exec) IncrementalVacuum(context.Context, driver.Querier, int) error { return nil }

// FreePages is 0: PostgreSQL does not count free pages of a file.
func (Exec) FreePages(context.Context, driver.Querier) (int64, error) { return 0, nil }

// SetIncrementalVacuum does nothing (see IncrementalVacuumOn).
func (Exec) SetIncrementalVacuum(context.Context, driver.Querier) error { return nil }

// Vacuum does nothing: there is no file of the store's own to rewrite.
func (Exec) Vacuum(context.Context, driver.Querier) error { return nil }

// CheckpointWAL reports nothing to checkpoint: the write-ahead log is the
// server's, not the store's.
func (Exec) CheckpointWAL(context.Context, driver.ReadQuerier) (busy bool, frames, done int64, err error) {
	return false, 0, 0, nil
}
