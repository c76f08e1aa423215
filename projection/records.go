package projection

import (
	"context"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/store"
)

// The records a store keeps of its projections: status and checkpoints
// (Records), the quarantine (Quarantine) and rebuilds in progress
// (Rebuilds). Runners and the rebuilder write them in their own
// transactions; operators and tools read them here.

// Status is what a projection is doing: one vocabulary for what the store
// keeps and what Stats report. The store's row holds active, stopped or
// rebuilding (Record.Status); Stats report running, idle, stopped,
// rebuilding or orphaned, from that row and the projection's lease.
type Status string

// Projection statuses.
const (
	// StatusActive is kept in the store: the projection may run. Stats
	// report it as running or idle, from its lease.
	StatusActive Status = "active"
	// StatusStopped: halted on a quarantined event (kept and reported).
	StatusStopped Status = "stopped"
	// StatusRebuilding: a replay is rebuilding it, and it serves
	// meanwhile (kept and reported).
	StatusRebuilding Status = "rebuilding"
	// StatusRunning is reported: a runner holds the lease.
	StatusRunning Status = "running"
	// StatusIdle is reported: no runner.
	StatusIdle Status = "idle"
	// StatusOrphaned is reported: its lease is held by a process on this
	// host that is gone, the lease expired and no runner took it over
	// within one lease period. Start a runner.
	StatusOrphaned Status = "orphaned"
)

// DefaultLeasePeriod stands for the lease period of a lease row written
// before eventlite recorded it.
const DefaultLeasePeriod = 15 * time.Second

// Record is a projection's stored status and place.
type Record struct {
	Name        string
	Status      Status // active, stopped or rebuilding
	Detail      string
	Checkpoint  int64
	Quarantined int // open quarantine entries
	LeaseOwner  string
	LeaseLive   bool // a runner holds an unexpired lease
	UpdatedAt   time.Time
	// LeaseExpiredFor is how long ago the lease expired, by the
	// database's clock (negative while it lasts; 0 without a lease owner).
	LeaseExpiredFor time.Duration
	// LeaseTTL is the period the lease's holder took it for
	// (DefaultLeasePeriod when the store does not record it).
	LeaseTTL time.Duration
	// OwnerGone: the lease owner is a process on this host that no longer
	// runs (see store.OwnerGone).
	OwnerGone bool
	// Orphaned: the owner is gone, its lease expired, and no runner took
	// the lease over within one lease period. Someone must start a runner.
	Orphaned bool
}

func recordOf(r projrow.Record) Record {
	return Record{Name: r.Name, Status: Status(r.Status), Detail: r.Detail, Checkpoint: r.Checkpoint, Quarantined: r.Quarantined,
		LeaseOwner: r.LeaseOwner, LeaseLive: r.LeaseLive, UpdatedAt: r.UpdatedAt, LeaseExpiredFor: r.LeaseExpiredFor,
		LeaseTTL: r.LeaseTTL, OwnerGone: r.OwnerGone, Orphaned: r.Orphaned}
}

// RecordBook is the status and checkpoints of a store's projections and
// the holes in its position sequence; Records returns it.
type RecordBook struct{ s *store.Store }

// Records returns the projection records of s.
func Records(s *store.Store) *RecordBook { return &RecordBook{s: s} }

// List lists the projections the store knows (those that ever ran).
func (b *RecordBook) List(ctx context.Context) ([]Record, error) {
	rows, err := store.Inner(inside.Key{}, b.s).ProjectionRecords(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range rows {
		out = append(out, recordOf(r))
	}
	return out, nil
}

// Get returns one projection's record; store.ErrNotFound when it never
// ran.
func (b *RecordBook) Get(ctx context.Context, name string) (Record, error) {
	rows, err := store.Inner(inside.Key{}, b.s).ProjectionRecords(ctx, name)
	if err != nil {
		return Record{}, err
	}
	if len(rows) == 0 {
		return Record{}, fmt.Errorf("projection %q: %w", name, store.ErrNotFound)
	}
	return recordOf(rows[0]), nil
}

// Checkpoint returns the position the named projection has applied up
// to, 0 when it has none. It reads the read pool.
func (b *RecordBook) Checkpoint(ctx context.Context, name string) (int64, error) {
	return store.Inner(inside.Key{}, b.s).Checkpoint(ctx, name)
}

// Checkpoints lists every checkpoint by name.
func (b *RecordBook) Checkpoints(ctx context.Context) (map[string]int64, error) {
	return store.Inner(inside.Key{}, b.s).Checkpoints(ctx)
}

// Hole is a run of missing global positions between two stored events.
type Hole struct {
	From, To   int64 // inclusive
	DetectedBy string
	DetectedAt time.Time
}

func holesOf(rows []projrow.Hole, err error) ([]Hole, error) {
	if err != nil {
		return nil, err
	}
	var out []Hole
	for _, h := range rows {
		out = append(out, Hole(h))
	}
	return out, nil
}

// HolesBetween finds the holes among positions after and up to upto: runs
// of missing positions between stored events (positions a scavenge
// removed are not holes). It reads on the read pool.
func (b *RecordBook) HolesBetween(ctx context.Context, after, upto int64) ([]Hole, error) {
	return holesOf(store.Inner(inside.Key{}, b.s).HolesBetween(ctx, after, upto))
}

// RecordedHoles lists the holes readers recorded.
func (b *RecordBook) RecordedHoles(ctx context.Context) ([]Hole, error) {
	return holesOf(store.Inner(inside.Key{}, b.s).RecordedHoles(ctx))
}

// Rebuild is a projection's rebuild in progress (package replay drives
// it): shadow copies of the projection's tables, named
// <table>__rb<Generation> (ShadowTable), that hold every matching event of
// the log up to Checkpoint.
type Rebuild struct {
	Projection string
	// Generation names the shadow tables. A new rebuild (a first one, one
	// from scratch, or the next one after a swap) takes a new generation;
	// a resumed one keeps its own.
	Generation int64
	// Checkpoint: the shadow has applied every matching event up to and
	// including this position.
	Checkpoint int64
	// Watermark is the log head when the latest run of the rebuild began.
	Watermark int64
	// Applied counts the events applied to the shadow since the
	// generation began, over every run.
	Applied   int64
	StartedAt time.Time // when the generation began
	UpdatedAt time.Time
}

// ShadowTable is the name of table's shadow in generation gen.
func ShadowTable(table string, gen int64) string {
	return fmt.Sprintf("%s__rb%d", table, gen)
}

// RebuildBook is the bookkeeping of a store's projection rebuilds: the
// rebuild in progress per projection and the count of events a rebuild
// replays; Rebuilds returns it. The rebuilder writes it in its own
// transactions.
type RebuildBook struct{ s *store.Store }

// Rebuilds returns the rebuild bookkeeping of s.
func Rebuilds(s *store.Store) *RebuildBook { return &RebuildBook{s: s} }

// Load returns the projection's rebuild in progress; ok is false when
// there is none.
func (b *RebuildBook) Load(ctx context.Context, projection string) (rb Rebuild, ok bool, err error) {
	row, ok, err := store.Inner(inside.Key{}, b.s).LoadRebuild(ctx, projection)
	return Rebuild(row), ok, err
}

// List lists every rebuild in progress (or left behind by a run that
// failed or was killed), by projection name.
func (b *RebuildBook) List(ctx context.Context) ([]Rebuild, error) {
	rows, err := store.Inner(inside.Key{}, b.s).ListRebuilds(ctx)
	if err != nil {
		return nil, err
	}
	var out []Rebuild
	for _, r := range rows {
		out = append(out, Rebuild(r))
	}
	return out, nil
}

// CountEvents counts the events with after < position <= upto, only
// those of the given types when types is not empty. It reads that range
// of the log (of every type, the smaller of it and the rest: the whole
// log's count comes from its smallest index).
func (b *RebuildBook) CountEvents(ctx context.Context, after, upto int64, types []string) (int64, error) {
	return store.Inner(inside.Key{}, b.s).CountEvents(ctx, after, upto, types)
}
