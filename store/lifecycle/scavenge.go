package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// MaxScavengeBatch is the most events a scavenge removes in one
// transaction.
const MaxScavengeBatch = 1000

// ScavengeOptions configure Lifecycle.Scavenge. The zero value removes
// what it may, reclaims space incrementally, and reports no progress.
type ScavengeOptions struct {
	// DryRun computes and lists what a scavenge would remove (and the
	// truncations retention would make) and changes nothing.
	DryRun bool
	// Vacuum runs a full VACUUM after the removal, which also converts a
	// file created before auto_vacuum=INCREMENTAL (older eventlite) so
	// that later scavenges give space back by themselves. It rewrites the
	// whole file and holds the writer while it runs. Not supported on
	// PostgreSQL: the scavenge refuses it before it removes anything.
	Vacuum bool
	// BatchSize is the most events removed per transaction, 1 to
	// MaxScavengeBatch. Default MaxScavengeBatch.
	BatchSize int
	// Progress, when set, is called after each batch with the events
	// removed so far and the most the scavenge may remove.
	Progress func(removed, total int64)
}

// ScavengeResult reports a scavenge (or, with DryRun, what it would do).
type ScavengeResult struct {
	DryRun bool
	// Trims are the truncations retention policies made (or would make).
	Trims []RetentionTrim
	// Streams lists, per stream, the events removed (or that would be).
	Streams []ScavengedStream
	// Removed counts the events removed (or that would be).
	Removed int64
	// Ranges are the global positions removed, merged with the ranges
	// removed by earlier scavenges they touch. Empty in a dry run.
	Ranges []PositionRange
	// HeldBack says which projection, rebuild or outbox row kept events
	// from being removed, and how many.
	HeldBack []HoldBack
	// Batches counts the transactions that removed events.
	Batches int
	// Erased counts the events of forgotten subjects whose ciphertext was
	// removed (see Erasure.Forget); they keep their attributes.
	Erased int64
	// BytesBefore and BytesAfter are the sizes of the database file plus
	// its WAL before and after; BytesReclaimed their difference. 0 on
	// PostgreSQL, where the store has no file.
	BytesBefore, BytesAfter, BytesReclaimed int64
	// FreePages counts the pages left free inside the file afterwards: a
	// file created before eventlite set auto_vacuum keeps them until a
	// scavenge with Vacuum. 0 on PostgreSQL.
	FreePages int64
	// Duration is how long the scavenge took.
	Duration time.Duration
}

// RetentionTrim is a truncation a retention policy makes: the stream's
// reads start at Before, and the scavenge removes the events before it.
type RetentionTrim struct {
	Tenant, Stream string
	Prefix         string // the policy's prefix
	Before         int64
	// Version is the version of the eventlite.stream.truncated event
	// appended (0 in a dry run, or when the stream moved meanwhile and
	// the next scavenge will trim it).
	Version int64
}

// ScavengedStream is what a scavenge removed from one stream: the
// versions From to To, Count events.
type ScavengedStream struct {
	Tenant, Stream string
	From, To       int64
	Count          int64
}

// PositionRange is a run of global positions, inclusive.
type PositionRange struct{ From, To int64 }

// HoldBack is a reader that kept events from being removed: By is
// "projection" (its checkpoint has not passed them), "rebuild" (a running
// rebuild has not), or "outbox" (the relay has not settled every event up
// to them: Position is the oldest event neither published nor discarded).
// Position is the checkpoint, or that event's position; Events counts the
// events it held back.
type HoldBack struct {
	By       string
	Name     string
	Position int64
	Events   int64
}

// ErrCheckpointBlocked: a scavenge removed what it could, but a reader
// kept the WAL checkpoint from finishing, so removed bytes may stay in
// the WAL file until the next checkpoint. Run the scavenge again once
// the readers are done.
var ErrCheckpointBlocked = errors.New("a reader kept the WAL checkpoint from finishing")

// Scavenge removes the events that deletions, truncations and retention
// policies allow, and gives the space back to the file system. It first
// applies the retention policies (each trimmed stream gets an
// eventlite.stream.truncated event, so projections see it), then removes
// events in transactions of at most MaxScavengeBatch. It never removes a
// stream's newest event (so a hard delete's tombstone stays), an event
// above the outbox's watermark (one the relay has not settled, or a later
// one: only positions the relay settled in order go), or one a
// projection's checkpoint or a running rebuild has not passed; it reports
// what held events back. The transaction that removes events records
// their positions as removed ranges (they are not holes, and are never
// handed out again) and their ids (reusing one is a duplicate); the
// operation ledger keeps its rows.
//
// Then, with secure_delete on for the removal, it runs incremental_vacuum
// (or a full VACUUM with opts.Vacuum) and a WAL checkpoint(TRUNCATE), so
// removed bytes are in neither the file nor its WAL. When a reader keeps
// the checkpoint from finishing it returns the result with an error
// matching ErrCheckpointBlocked.
//
// On PostgreSQL the removal is the same; the server manages its own
// files, so there is no space step to run and opts.Vacuum is refused.
func (l *Lifecycle) Scavenge(ctx context.Context, opts ScavengeOptions) (ScavengeResult, error) {
	res := ScavengeResult{DryRun: opts.DryRun}
	if opts.BatchSize < 0 || opts.BatchSize > MaxScavengeBatch {
		return res, fmt.Errorf("scavenge: batch size %d: want 1 to %d", opts.BatchSize, MaxScavengeBatch)
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = MaxScavengeBatch
	}
	if opts.DryRun && opts.Vacuum {
		return res, errors.New("scavenge: a dry run does not vacuum: drop one of DryRun and Vacuum")
	}
	r, err := store.Inner(inside.Key{}, l.s).Scavenge(ctx, opts.DryRun, opts.Vacuum, opts.BatchSize, opts.Progress)
	if r.CheckpointBlocked {
		err = fmt.Errorf("%w: %w", ErrCheckpointBlocked, err)
	}
	res = ScavengeResult{DryRun: r.DryRun, Removed: r.Removed, Batches: r.Batches, Erased: r.Erased,
		BytesBefore: r.BytesBefore, BytesAfter: r.BytesAfter, BytesReclaimed: r.BytesReclaimed,
		FreePages: r.FreePages, Duration: r.Duration}
	for _, t := range r.Trims {
		res.Trims = append(res.Trims, RetentionTrim(t))
	}
	for _, st := range r.Streams {
		res.Streams = append(res.Streams, ScavengedStream(st))
	}
	for _, pr := range r.Ranges {
		res.Ranges = append(res.Ranges, PositionRange(pr))
	}
	for _, h := range r.HeldBack {
		res.HeldBack = append(res.HeldBack, HoldBack(h))
	}
	return res, err
}
