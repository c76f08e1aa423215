package store

import (
	"context"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
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
	row, ok, err := s.ex.LoadSnapshot(ctx, s.rdb, tenant, stream, schemaVersion)
	if err != nil {
		return Snapshot{}, false, fmt.Errorf("load snapshot of %q: %w", stream, mapErr(err))
	}
	if !ok {
		return Snapshot{}, false, nil
	}
	return Snapshot{Tenant: tenant, Stream: stream, SchemaVersion: schemaVersion, Version: row.Version, State: row.State,
		CreatedAt: time.Unix(0, row.CreatedAt).UTC()}, true, nil
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
	err := s.ex.SaveSnapshot(ctx, s.wconn, snap.Tenant, snap.Stream, driver.SnapshotRow{SchemaVersion: snap.SchemaVersion,
		Version: snap.Version, State: snap.State, CreatedAt: tx.now})
	if err != nil {
		return fmt.Errorf("save snapshot of %q: %w", snap.Stream, mapErr(err))
	}
	return nil
}
