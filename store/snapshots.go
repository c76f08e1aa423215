package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Snapshot is a saved aggregate state: the fold of a stream's events up to
// Version, encoded by its owner under SchemaVersion.
type Snapshot struct {
	Tenant        string
	Stream        string
	SchemaVersion int
	Version       int64
	State         []byte
	CreatedAt     time.Time
}

// LoadSnapshot returns the stream's snapshot of the given state schema
// version, if there is one. Snapshots of other schema versions are never
// returned: the caller cannot trust them.
func (a *Aggregates) LoadSnapshot(ctx context.Context, tenant, stream string, schemaVersion int) (Snapshot, bool, error) {
	s := a.s
	snap := Snapshot{Tenant: tenant, Stream: stream, SchemaVersion: schemaVersion}
	var created int64
	err := s.rdb.QueryRowContext(ctx, `SELECT version, state, created_at FROM snapshots
		WHERE tenant = ? AND stream_id = ? AND schema_version = ?`, tenant, stream, schemaVersion).Scan(&snap.Version, &snap.State, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Snapshot{}, false, nil
	}
	if err != nil {
		return Snapshot{}, false, fmt.Errorf("load snapshot of %q: %w", stream, mapErr(err))
	}
	snap.CreatedAt = time.Unix(0, created).UTC()
	return snap, true, nil
}

// SaveSnapshot stores a snapshot inside an Update closure, replacing an
// older one of the same schema version (a newer one is kept). Save it in
// the transaction that appended the events it includes, so it never runs
// ahead of the log.
func (tx *Tx) SaveSnapshot(ctx context.Context, snap Snapshot) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO snapshots (tenant, stream_id, schema_version, version, state, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, stream_id, schema_version) DO UPDATE
		SET version = excluded.version, state = excluded.state, created_at = excluded.created_at
		WHERE excluded.version > snapshots.version`,
		snap.Tenant, snap.Stream, snap.SchemaVersion, snap.Version, snap.State, tx.now)
	if err != nil {
		return fmt.Errorf("save snapshot of %q: %w", snap.Stream, mapErr(err))
	}
	return nil
}
