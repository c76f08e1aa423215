package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// LowestReader reads checkpoints, projections and rebuilds in one
// statement.
func (Exec) LowestReader(ctx context.Context, q driver.ReadQuerier) (by, name string, pos int64, ok bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT by, name, position FROM (
		SELECT 'projection' AS by, name, position FROM checkpoints
		UNION ALL SELECT 'projection', p.name, 0 FROM projections p WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.name = p.name)
		UNION ALL SELECT 'rebuild', projection, checkpoint FROM rebuilds)
		ORDER BY position, by, name LIMIT 1`).Scan(&by, &name, &pos)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", 0, false, nil
	}
	return by, name, pos, err == nil, err
}

// LoadScavengeBatch fills temp.scavenge_batch.
func (Exec) LoadScavengeBatch(ctx context.Context, q driver.Querier, positions []int64) error {
	if _, err := q.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS scavenge_batch (position INTEGER PRIMARY KEY)`); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM temp.scavenge_batch`); err != nil {
		return err
	}
	args := make([]any, len(positions))
	for i, p := range positions {
		args[i] = p
	}
	_, err := q.ExecContext(ctx, `INSERT INTO temp.scavenge_batch (position) VALUES (?)`+strings.Repeat(`, (?)`, len(args)-1), args...)
	return err
}

// RaisePositionFloor raises position_floor to the highest stored
// position.
func (Exec) RaisePositionFloor(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, `UPDATE position_floor SET position = max(position, (SELECT COALESCE(MAX(position), 0) FROM events))`)
	return err
}

// DeleteBatchEvents deletes the batch's events.
func (Exec) DeleteBatchEvents(ctx context.Context, q driver.Querier) (int64, error) {
	// Their tag index rows first, found by the tags the events store.
	if err := driver.DeleteTagRowsOf(ctx, q, false, `SELECT tenant, position, json_extract(x, '$.`+envelope.ExtTags+`') FROM (
		SELECT tenant, position, `+ExtensionsSQL+` AS x FROM events
		WHERE position IN (SELECT position FROM temp.scavenge_batch) AND attrs IS NOT NULL)
		WHERE x IS NOT NULL AND json_valid(x) AND json_type(x, '$.`+envelope.ExtTags+`') = 'text'`); err != nil {
		return 0, err
	}
	res, err := q.ExecContext(ctx, `DELETE FROM events WHERE position IN (SELECT position FROM temp.scavenge_batch)`)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// SetSecureDelete sets PRAGMA secure_delete to ON, or to FAST (the
// writer's setting in its connection string).
func (Exec) SetSecureDelete(ctx context.Context, q driver.Querier, on bool) error {
	v := "FAST"
	if on {
		v = "ON"
	}
	_, err := q.ExecContext(ctx, "PRAGMA secure_delete = "+v)
	return err
}

// IncrementalVacuumOn reads PRAGMA auto_vacuum (2 is INCREMENTAL).
func (Exec) IncrementalVacuumOn(ctx context.Context, q driver.Querier) (bool, error) {
	var mode int64
	if err := q.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return false, err
	}
	return mode == 2, nil
}

// IncrementalVacuum runs PRAGMA incremental_vacuum(pages), reading its
// steps to the end: each step frees a page.
func (Exec) IncrementalVacuum(ctx context.Context, q driver.Querier, pages int) error {
	rows, err := q.QueryContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", pages))
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

// FreePages reads PRAGMA freelist_count.
func (Exec) FreePages(ctx context.Context, q driver.Querier) (int64, error) {
	var free int64
	err := q.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free)
	return free, err
}

// SetIncrementalVacuum sets PRAGMA auto_vacuum = INCREMENTAL, which takes
// effect with the next VACUUM on a file created without it.
func (Exec) SetIncrementalVacuum(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL")
	return err
}

// Vacuum runs VACUUM.
func (Exec) Vacuum(ctx context.Context, q driver.Querier) error {
	_, err := q.ExecContext(ctx, "VACUUM")
	return err
}

// CheckpointWAL runs PRAGMA wal_checkpoint(TRUNCATE).
func (Exec) CheckpointWAL(ctx context.Context, q driver.ReadQuerier) (busy bool, frames, done int64, err error) {
	var b int64
	err = q.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&b, &frames, &done)
	return b != 0, frames, done, err
}
