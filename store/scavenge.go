package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// maxScavengeBatch is the most events a scavenge removes in one
// transaction (lifecycle.MaxScavengeBatch).
const maxScavengeBatch = 1000

// scavengeOptions configure a scavenge (lifecycle.ScavengeOptions, whose
// documentation says what each field does).
type scavengeOptions struct {
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
	// maxScavengeBatch. Default maxScavengeBatch.
	BatchSize int
	// Progress, when set, is called after each batch with the events
	// removed so far and the most the scavenge may remove.
	Progress func(removed, total int64)
}

// scavengeResult reports a scavenge (or, with DryRun, what it would do):
// lifecycle.ScavengeResult, whose documentation says what each field
// holds.
type scavengeResult struct {
	DryRun bool
	// Trims are the truncations retention policies made (or would make).
	Trims []retentionTrim
	// Streams lists, per stream, the events removed (or that would be).
	Streams []scavengedStream
	// Removed counts the events removed (or that would be).
	Removed int64
	// Ranges are the global positions removed, merged with the ranges
	// removed by earlier scavenges they touch. Empty in a dry run.
	Ranges []positionRange
	// HeldBack says which projection, rebuild or outbox row kept events
	// from being removed, and how many.
	HeldBack []holdBack
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
	// CheckpointBlocked: a reader kept the WAL checkpoint from finishing
	// (lifecycle.ErrCheckpointBlocked); the error says how far it got.
	CheckpointBlocked bool
}

// retentionTrim is a truncation a retention policy makes: the stream's
// reads start at Before, and the scavenge removes the events before it.
type retentionTrim struct {
	Tenant, Stream string
	Prefix         string // the policy's prefix
	Before         int64
	// Version is the version of the eventlite.stream.truncated event
	// appended (0 in a dry run, or when the stream moved meanwhile and
	// the next scavenge will trim it).
	Version int64
}

// scavengedStream is what a scavenge removed from one stream: the
// versions From to To, Count events.
type scavengedStream struct {
	Tenant, Stream string
	From, To       int64
	Count          int64
}

// positionRange is a run of global positions, inclusive.
type positionRange struct{ From, To int64 }

// holdBack is a reader that kept events from being removed: By is
// "projection" (its checkpoint has not passed them), "rebuild" (a running
// rebuild has not), or "outbox" (the relay has not settled every event up
// to them: Position is the oldest event neither published nor discarded).
// Position is the checkpoint, or that event's position; Events counts the
// events it held back.
type holdBack struct {
	By       string
	Name     string
	Position int64
	Events   int64
}

// scavenge removes the events that deletions, truncations and retention
// policies allow, and gives the space back to the file system. It first
// applies the retention policies (each trimmed stream gets an
// eventlite.stream.truncated event, so projections see it), then removes
// events in transactions of at most maxScavengeBatch. It never removes a
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
// the checkpoint from finishing it returns the result with
// CheckpointBlocked set and an error saying how far it got.
//
// On PostgreSQL the removal is the same; the server manages its own
// files, so there is no space step to run and opts.Vacuum is refused.
func (s *Store) scavenge(ctx context.Context, opts scavengeOptions) (scavengeResult, error) {
	start := time.Now()
	res := scavengeResult{DryRun: opts.DryRun}
	if opts.BatchSize < 0 || opts.BatchSize > maxScavengeBatch {
		return res, fmt.Errorf("scavenge: batch size %d: want 1 to %d", opts.BatchSize, maxScavengeBatch)
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = maxScavengeBatch
	}
	if opts.DryRun && opts.Vacuum {
		return res, errors.New("scavenge: a dry run does not vacuum: drop one of DryRun and Vacuum")
	}
	if opts.Vacuum && s.onServer() {
		return res, errors.New("scavenge: Vacuum is not supported on PostgreSQL: it rewrites a SQLite file, and the server reclaims the space of removed events itself (autovacuum)")
	}
	if err := s.rdb.check(); err != nil {
		return res, err
	}
	res.BytesBefore = s.fileBytes()
	trims, err := s.applyRetention(ctx, opts.DryRun)
	if err != nil {
		return res, err
	}
	res.Trims = trims
	cands, err := s.scavengeCandidates(ctx, trims, opts.DryRun)
	if err != nil {
		return res, err
	}
	var total int64
	for _, c := range cands {
		total += c.hi - c.lo
	}
	holds := newHoldTally()
	if opts.DryRun {
		err = s.scavengeDry(ctx, cands, holds, &res)
	} else {
		err = s.scavengeBatches(ctx, cands, holds, opts, total, &res)
	}
	res.HeldBack = holds.list()
	if err != nil {
		return res, err
	}
	if !opts.DryRun {
		// The ciphertext of forgotten subjects' events goes too (their
		// keys went with Forget), before the space is given back.
		res.Erased, err = s.scrubErased(ctx)
	}
	if err == nil && !opts.DryRun {
		err = s.reclaim(ctx, opts.Vacuum, &res)
	}
	res.BytesAfter = s.fileBytes()
	if opts.DryRun {
		res.BytesAfter = res.BytesBefore
	}
	res.BytesReclaimed = res.BytesBefore - res.BytesAfter
	res.Duration = time.Since(start)
	return res, err
}

// retentionChunk is how many streams retention truncates per
// transaction: one fsync for them all, and the writer free for appends
// between two chunks.
const retentionChunk = 25

// applyRetention truncates the streams the policies trim (or, in a dry
// run, only computes them). A stream that moved since the trim was
// computed is left for the next scavenge.
func (s *Store) applyRetention(ctx context.Context, dry bool) ([]retentionTrim, error) {
	trims, err := s.retentionTrims(ctx, s.opts.Now())
	if err != nil {
		return nil, err
	}
	var out []retentionTrim
	for start := 0; start < len(trims); start += retentionChunk {
		chunk := trims[start:min(start+retentionChunk, len(trims))]
		var done []retentionTrim
		apply := func(tx *Tx) error {
			done = done[:0]
			for _, t := range chunk {
				rt := retentionTrim{Tenant: t.Tenant, Stream: t.Stream, Prefix: t.Prefix, Before: t.Before}
				if tx != nil {
					r, err := s.truncateStream(ctx, tx, t.Tenant, t.Stream, t.Before, Exact(t.Version))
					var ce *ConflictError
					switch {
					case errors.As(err, &ce), errors.Is(err, ErrNotFound), errors.Is(err, ErrStreamDeleted):
						s.log.Debug("retention: the stream changed meanwhile; the next scavenge trims it", "tenant", t.Tenant, "stream", t.Stream, "error", err)
						continue
					case err != nil:
						return fmt.Errorf("retention: truncate %q before %d: %w", t.Stream, t.Before, err)
					}
					rt.Version = r.Version
				}
				done = append(done, rt)
			}
			return nil
		}
		if dry {
			_ = apply(nil)
		} else if err := s.Update(ctx, apply); err != nil {
			return out, err
		}
		for _, rt := range done {
			if !dry {
				s.log.Info("retention truncated a stream", "tenant", rt.Tenant, "stream", rt.Stream, "before", rt.Before, "policy", rt.Prefix)
			}
		}
		out = append(out, done...)
	}
	return out, nil
}

// candidate is a stream with events a scavenge may remove: versions lo
// to hi-1 (as planned; each batch checks the stream again).
type candidate struct {
	tenant, stream string
	lo, hi         int64
}

// scavengeCandidates lists the streams with events before the version
// their reads start at, but for their newest event. In a dry run the
// trims count as made.
func (s *Store) scavengeCandidates(ctx context.Context, trims []retentionTrim, dry bool) ([]candidate, error) {
	var out []candidate
	seen := map[[2]string]int{}
	rows, err := s.ex.ScavengeCandidates(ctx, s.rdb)
	if err != nil {
		return nil, fmt.Errorf("scavenge: list streams: %w", mapErr(err))
	}
	for _, r := range rows {
		if r.HasLo && r.Lo < r.Hi {
			seen[[2]string{r.Tenant, r.Stream}] = len(out)
			out = append(out, candidate{tenant: r.Tenant, stream: r.Stream, lo: r.Lo, hi: r.Hi})
		}
	}
	if !dry {
		return out, nil
	}
	for _, t := range trims {
		k := [2]string{t.Tenant, t.Stream}
		if i, ok := seen[k]; ok {
			out[i].hi = max(out[i].hi, t.Before)
			continue
		}
		lo, err := s.ex.OldestVersion(ctx, s.rdb, t.Tenant, t.Stream)
		if err != nil {
			return nil, fmt.Errorf("scavenge: stream %q: %w", t.Stream, mapErr(err))
		}
		if lo < t.Before {
			out = append(out, candidate{tenant: t.Tenant, stream: t.Stream, lo: lo, hi: t.Before})
		}
	}
	return out, nil
}

// fileBytes is the size of the database file plus its WAL; 0 on a
// server.
func (s *Store) fileBytes() int64 {
	if s.onServer() {
		return 0
	}
	var n int64
	for _, p := range []string{s.path, s.path + "-wal"} {
		if n2, ok := fileSize(p); ok {
			n += n2
		}
	}
	return n
}
