package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

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

// RaisePositionFloor raises log_head.position, PostgreSQL's position
// floor, to the highest stored position; it never lowers it. Appends move
// it already, so it is there: the statement keeps the guarantee explicit.
func (Exec) RaisePositionFloor(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, `UPDATE log_head SET position = GREATEST(position, (SELECT COALESCE(max(position), 0) FROM events))`)
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
