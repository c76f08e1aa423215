package store

import (
	"context"
	"fmt"
	"time"
)

// The status of the store's projections: what runners record and what
// operators read.

// Projections is the status of the store's projections and their
// quarantine, reached with Store.Projections: status, checkpoints,
// quarantined events and the operator's actions on them, and holes in
// the position sequence. Runners write through their Update transaction
// (Bookkeeping: SetProjectionStatus, Quarantine, RecordHole...).
type Projections struct{ s *Store }

// Projections returns the store's projection status and quarantine.
func (s *Store) Projections() *Projections { return &Projections{s: s} }

// ProjectionStatus is what a projection is doing: one vocabulary for what
// the store keeps and what package projection reports. The store's row
// holds active, stopped or rebuilding (ProjectionRecord.Status);
// projection.Stats reports running, idle, stopped, rebuilding or
// orphaned, from that row and the projection's lease.
type ProjectionStatus string

// Projection statuses.
const (
	// ProjectionActive is kept in the store: the projection may run.
	// Stats report it as running or idle, from its lease.
	ProjectionActive ProjectionStatus = "active"
	// ProjectionStopped: halted on a quarantined event (kept and reported).
	ProjectionStopped ProjectionStatus = "stopped"
	// ProjectionRebuilding: a replay is rebuilding it, and it serves
	// meanwhile (kept and reported).
	ProjectionRebuilding ProjectionStatus = "rebuilding"
	// ProjectionRunning is reported: a runner holds the lease.
	ProjectionRunning ProjectionStatus = "running"
	// ProjectionIdle is reported: no runner.
	ProjectionIdle ProjectionStatus = "idle"
	// ProjectionOrphaned is reported: its lease is held by a process on
	// this host that is gone, the lease expired and no runner took it
	// over within one lease period. Start a runner.
	ProjectionOrphaned ProjectionStatus = "orphaned"
)

// SetProjectionStatus records a projection's status with a detail (why
// it stopped, say).
func (tx txBook) SetProjectionStatus(ctx context.Context, name string, status ProjectionStatus, detail string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	return mapErr(s.ex.SetProjectionStatus(ctx, s.wconn, name, string(status), detail, tx.now))
}

// ProjectionRecord is a projection's stored status and place.
type ProjectionRecord struct {
	Name        string
	Status      ProjectionStatus // active, stopped or rebuilding
	Detail      string
	Checkpoint  int64
	Quarantined int // open quarantine entries
	LeaseOwner  string
	LeaseLive   bool // a runner holds an unexpired lease
	UpdatedAt   time.Time
	// LeaseExpiredFor is how long ago the lease expired, by SQLite's
	// clock (negative while it lasts; 0 without a lease owner).
	LeaseExpiredFor time.Duration
	// LeaseTTL is the period the lease's holder took it for
	// (DefaultLeasePeriod when the file does not record it).
	LeaseTTL time.Duration
	// OwnerGone: the lease owner is a process on this host that no longer
	// runs (see OwnerGone).
	OwnerGone bool
	// Orphaned: the owner is gone, its lease expired, and no runner took
	// the lease over within one lease period. Someone must start a runner.
	Orphaned bool
}

// DefaultLeasePeriod stands for the lease period of a lease row written
// before eventlite recorded it.
const DefaultLeasePeriod = 15 * time.Second

// List lists the projections the store knows (those that ever ran).
func (p *Projections) List(ctx context.Context) ([]ProjectionRecord, error) {
	s := p.s
	return s.projections(ctx, "")
}

// Get returns one projection's record; ErrNotFound when it never ran.
func (p *Projections) Get(ctx context.Context, name string) (ProjectionRecord, error) {
	s := p.s
	recs, err := s.projections(ctx, name)
	if err != nil {
		return ProjectionRecord{}, err
	}
	if len(recs) == 0 {
		return ProjectionRecord{}, fmt.Errorf("projection %q: %w", name, ErrNotFound)
	}
	return recs[0], nil
}

// projections reads the record of the projection name, or of every
// projection when name is "".
func (s *Store) projections(ctx context.Context, name string) ([]ProjectionRecord, error) {
	rows, err := s.ex.Projections(ctx, s.rdb, name)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []ProjectionRecord
	for _, row := range rows {
		r := ProjectionRecord{Name: row.Name, Status: ProjectionStatus(row.Status), Detail: row.Detail,
			Checkpoint: row.Checkpoint, Quarantined: row.Quarantined, LeaseOwner: row.LeaseOwner, LeaseLive: row.LeaseLive,
			UpdatedAt: time.Unix(0, row.UpdatedAt).UTC()}
		if r.LeaseOwner != "" {
			r.LeaseExpiredFor, r.LeaseTTL = time.Duration(row.LeaseExpiredForMs)*time.Millisecond, time.Duration(row.LeaseTTLMs)*time.Millisecond
			if r.LeaseTTL <= 0 {
				r.LeaseTTL = DefaultLeasePeriod
			}
			r.OwnerGone = OwnerGone(r.LeaseOwner)
			r.Orphaned = r.OwnerGone && r.LeaseExpiredFor >= r.LeaseTTL
		}
		out = append(out, r)
	}
	return out, nil
}
