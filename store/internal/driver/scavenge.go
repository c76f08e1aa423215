package driver

import "context"

// Scavenge is what a scavenge asks of the engine: which streams have
// events before where their reads start, what holds events back (the
// readers' checkpoints, the outbox's watermark), and the removal of a
// batch of events with the bookkeeping that keeps their positions and ids
// from ever being handed out again.
//
// The store runs a batch's methods inside one write transaction, in this
// order: LoadScavengeBatch, RecordRemovedIDs, RaisePositionFloor,
// MergeRemovedRange (once per run of positions), DeleteBatchOutbox,
// DeleteBatchEvents. The events stay in the log until DeleteBatchEvents,
// so that the steps before it can still read them.
type Scavenge interface {
	// ScavengeCandidates lists, in (tenant, stream) order, the streams
	// whose reads start after version 1: their oldest stored version
	// (HasLo false when none is stored) and the version the removal stops
	// before: where reads start, but never past the newest event other
	// than a restore's eventlite.stream.restored (which lands above a
	// deleted stream's tombstone); RemovableBefore's bound, so that a
	// dry run lists what the scavenge removes.
	ScavengeCandidates(ctx context.Context, q ReadQuerier) ([]ScavengeCandidate, error)
	// OldestVersion reads the lowest version stored of a stream; a
	// stream without events is an error (the store asks only for
	// streams it knows hold events).
	OldestVersion(ctx context.Context, q ReadQuerier, tenant, stream string) (int64, error)
	// RemovableBefore reads the version a removal in stream must stop
	// before now: where its reads start, never past its newest event
	// (a restore's eventlite.stream.restored aside, as above).
	// Inside the batch's write transaction, so that the stream cannot
	// move between this read and the removal.
	RemovableBefore(ctx context.Context, q ReadQuerier, tenant, stream string) (int64, error)
	// LowestReader reads the lowest checkpoint of the readers that hold
	// events back: projections (one registered without a checkpoint is at
	// 0) and running rebuilds, by position, then by ("projection" or
	// "rebuild"), then name. ok is false when there is no reader.
	LowestReader(ctx context.Context, q ReadQuerier) (by, name string, pos int64, ok bool, err error)
	// OutboxSettled reads the outbox's watermark (every position at or
	// below it is settled) and the position of the oldest unsettled event
	// above it, 0 when there is none.
	OutboxSettled(ctx context.Context, q ReadQuerier) (settled, pending int64, err error)
	// WalkStream calls fn for up to limit events of a stream with a
	// version from from to before-1, in version order, until fn returns
	// false.
	WalkStream(ctx context.Context, q ReadQuerier, tenant, stream string, from, before int64, limit int, fn func(pos, version int64) bool) error
	// LoadScavengeBatch makes positions the batch that the methods below
	// act on, for the rest of the write transaction (SQLite: a temporary
	// table). positions is not empty.
	LoadScavengeBatch(ctx context.Context, q Querier, positions []int64) error
	// RecordRemovedIDs records the batch's events' ids as removed, so
	// that an append reusing one is a duplicate.
	RecordRemovedIDs(ctx context.Context, q Querier) error
	// RaisePositionFloor raises the position floor to the head, before
	// the events go: positions are handed out above both the highest
	// stored one and the floor, so none is handed out again once the
	// events that had it are gone.
	RaisePositionFloor(ctx context.Context, q Querier) error
	// MergeRemovedRange records the removed positions from..to, joined
	// with the recorded ranges just before and just after it, and returns
	// the range recorded. Its reads and writes must be atomic with the
	// rest of the batch (SQLite: the write transaction holds the only
	// writer; PostgreSQL: the batch holds the log's head row lock).
	MergeRemovedRange(ctx context.Context, q Querier, from, to, at int64) (int64, int64, error)
	// DeleteBatchOutbox deletes the outbox rows of the batch's events.
	DeleteBatchOutbox(ctx context.Context, q Querier) error
	// DeleteBatchEvents deletes the batch's events and returns how many
	// it deleted.
	DeleteBatchEvents(ctx context.Context, q Querier) (int64, error)
	// IDRemoved reports whether a scavenge removed the event that had
	// id in tenant.
	IDRemoved(ctx context.Context, q ReadQuerier, tenant, id string) (bool, error)
}

// ScavengeCandidate is a stream whose reads start after version 1.
type ScavengeCandidate struct {
	Tenant, Stream string
	Lo             int64 // the oldest stored version, when HasLo
	HasLo          bool
	Hi             int64 // the removal stops before this version
}

// Space is how a scavenge, Forget and Scrub give the bytes of what they
// removed back: overwriting freed content, returning free pages to the
// file system, checkpointing a write-ahead log. These are SQLite's file
// management; each method says what an engine without it does, so that
// the store's logic runs unchanged on it.
//
// The methods run on a connection outside any transaction (SQLite
// refuses VACUUM and a checkpoint inside one): the writer's, held so that
// no append runs meanwhile, or for CheckpointWAL a read connection too.
type Space interface {
	// SetSecureDelete turns the overwriting of deleted content and freed
	// pages on, or back to the writer's default. An engine that does not
	// keep deleted content in its files (or cannot overwrite it) does
	// nothing and returns nil.
	SetSecureDelete(ctx context.Context, q Querier, on bool) error
	// IncrementalVacuumOn reports whether the file gives free pages back
	// in steps (SQLite: auto_vacuum=INCREMENTAL). An engine that reclaims
	// space by itself returns false: the store then skips the steps.
	IncrementalVacuumOn(ctx context.Context, q Querier) (bool, error)
	// IncrementalVacuum gives up to pages free pages back to the file
	// system. An engine without it returns nil.
	IncrementalVacuum(ctx context.Context, q Querier, pages int) error
	// FreePages counts the pages free inside the file; an engine that
	// does not count them returns 0.
	FreePages(ctx context.Context, q Querier) (int64, error)
	// SetIncrementalVacuum makes the next Vacuum convert the file to
	// give free pages back in steps. An engine without it returns nil.
	SetIncrementalVacuum(ctx context.Context, q Querier) error
	// Vacuum rewrites the whole file without its free pages. An engine
	// without it returns nil.
	Vacuum(ctx context.Context, q Querier) error
	// CheckpointWAL copies the write-ahead log into the file and
	// truncates it. busy is true when a reader kept it from finishing;
	// frames and done count the log's frames and those checkpointed. An
	// engine without such a log returns false, 0, 0.
	CheckpointWAL(ctx context.Context, q ReadQuerier) (busy bool, frames, done int64, err error)
}
