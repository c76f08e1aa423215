package store

import (
	"context"
	"time"

	"github.com/eventlite/eventlite/internal/projrow"
)

// The status of the store's projections: what runners record and what
// operators read.

// The statuses the store keeps in a projection's row (package
// projection's Status names them).
const (
	projectionActive     = "active"
	projectionStopped    = "stopped"
	projectionRebuilding = "rebuilding"
)

// SetProjectionStatus records a projection's status with a detail (why
// it stopped, say).
func (tx txBook) SetProjectionStatus(ctx context.Context, name string, status string, detail string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	return mapErr(s.ex.SetProjectionStatus(ctx, s.wconn, name, status, detail, tx.now))
}

// defaultLeasePeriod stands for the lease period of a lease row written
// before eventlite recorded it (projection.DefaultLeasePeriod).
const defaultLeasePeriod = 15 * time.Second

// projections reads the record of the projection name, or of every
// projection when name is "".
func (s *Store) projections(ctx context.Context, name string) ([]projrow.Record, error) {
	rows, err := s.ex.Projections(ctx, s.rdb, name)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []projrow.Record
	for _, row := range rows {
		r := projrow.Record{Name: row.Name, Status: row.Status, Detail: row.Detail,
			Checkpoint: row.Checkpoint, Quarantined: row.Quarantined, LeaseOwner: row.LeaseOwner, LeaseLive: row.LeaseLive,
			UpdatedAt: time.Unix(0, row.UpdatedAt).UTC()}
		if r.LeaseOwner != "" {
			r.LeaseExpiredFor, r.LeaseTTL = time.Duration(row.LeaseExpiredForMs)*time.Millisecond, time.Duration(row.LeaseTTLMs)*time.Millisecond
			if r.LeaseTTL <= 0 {
				r.LeaseTTL = defaultLeasePeriod
			}
			r.OwnerGone = OwnerGone(r.LeaseOwner)
			r.Orphaned = r.OwnerGone && r.LeaseExpiredFor >= r.LeaseTTL
		}
		out = append(out, r)
	}
	return out, nil
}
