package store

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// horizon is the position up to which every reader has applied the log:
// events above it are held back by By/Name. ok is false when no reader
// has a checkpoint (nothing holds). Events above the outbox's watermark
// W (settled) are held back too, by the oldest pending event (pending).
type horizon struct {
	pos      int64
	by, name string
	ok       bool
	settled  int64
	pending  int64
}

// readHorizon reads the lowest checkpoint of the projections (a
// registered projection without one holds everything) and of the
// running rebuilds.
func (s *Store) readHorizon(ctx context.Context, q driver.ReadQuerier) (horizon, error) {
	var h horizon
	var err error
	h.by, h.name, h.pos, h.ok, err = s.ex.LowestReader(ctx, q)
	if err != nil {
		return horizon{}, fmt.Errorf("scavenge: read checkpoints: %w", mapErr(err))
	}
	// Only positions at or below W may go: the relay has settled them.
	h.settled, h.pending, err = s.ex.OutboxSettled(ctx, q)
	if err != nil {
		return horizon{}, fmt.Errorf("scavenge: read the outbox watermark: %w", mapErr(err))
	}
	return h, nil
}

// streamStep is what one batch does to one candidate stream: it removes
// versions from..to (n events, none when n is 0) and, when held is set,
// stops there for this scavenge.
type streamStep struct {
	idx      int
	from, to int64
	n        int64
	held     *holdBack
	done     bool
}

// walkStream reads up to limit removable events of c from version lo on,
// in version order, and stops at the first one held back. hi is the
// version the removal stops before.
func (s *Store) walkStream(ctx context.Context, q driver.ReadQuerier, c candidate, hi int64, hz horizon, limit int, positions []int64) ([]int64, streamStep, error) {
	st := streamStep{}
	read := 0
	err := s.ex.WalkStream(ctx, q, c.tenant, c.stream, c.lo, hi, limit, func(pos, version int64) bool {
		read++
		switch {
		case hz.ok && pos > hz.pos:
			st.held = &holdBack{By: hz.by, Name: hz.name, Position: hz.pos, Events: hi - version}
		case pos > hz.settled:
			// Held by the oldest pending event, which W waits for.
			held := hz.pending
			if held == 0 || held > pos {
				held = pos
			}
			st.held = &holdBack{By: "outbox", Position: held, Events: hi - version}
		}
		if st.held != nil {
			st.done = true
			return false
		}
		if st.n == 0 {
			st.from = version
		}
		st.to = version
		st.n++
		positions = append(positions, pos)
		return true
	})
	if err != nil {
		return positions, st, fmt.Errorf("scavenge: stream %q: %w", c.stream, mapErr(err))
	}
	if read < limit {
		st.done = true
	}
	return positions, st, nil
}

// holdTally adds up what held events back, per reader or outbox row.
type holdTally struct {
	m     map[[3]string]*holdBack
	order [][3]string
}

func newHoldTally() *holdTally { return &holdTally{m: map[[3]string]*holdBack{}} }

func (t *holdTally) add(h holdBack) {
	k := [3]string{h.By, h.Name, fmt.Sprint(h.Position)}
	if p, ok := t.m[k]; ok {
		p.Events += h.Events
		return
	}
	t.m[k] = &h
	t.order = append(t.order, k)
}

func (t *holdTally) list() []holdBack {
	out := make([]holdBack, 0, len(t.order))
	for _, k := range t.order {
		out = append(out, *t.m[k])
	}
	return out
}

// scavengeDry walks the candidates on the read pool and counts what a
// scavenge would remove, changing nothing.
func (s *Store) scavengeDry(ctx context.Context, cands []candidate, holds *holdTally, res *scavengeResult) error {
	hz, err := s.readHorizon(ctx, s.rdb)
	if err != nil {
		return err
	}
	for _, c := range cands {
		_, st, err := s.walkStream(ctx, s.rdb, c, c.hi, hz, int(c.hi-c.lo)+1, nil)
		if err != nil {
			return err
		}
		if st.held != nil {
			holds.add(*st.held)
		}
		if st.n > 0 {
			res.Streams = append(res.Streams, scavengedStream{Tenant: c.tenant, Stream: c.stream, From: st.from, To: st.to, Count: st.n})
			res.Removed += st.n
		}
	}
	return nil
}

// scavengeBatches removes the candidates' events, at most
// opts.BatchSize per transaction.
func (s *Store) scavengeBatches(ctx context.Context, cands []candidate, holds *holdTally, opts scavengeOptions, total int64, res *scavengeResult) error {
	return s.withSecureDelete(ctx, func() error {
		return s.removeBatches(ctx, cands, holds, opts, total, res)
	})
}

// removeBatches is scavengeBatches with secure_delete on.
func (s *Store) removeBatches(ctx context.Context, cands []candidate, holds *holdTally, opts scavengeOptions, total int64, res *scavengeResult) error {
	streams := map[int]int{} // candidate -> index in res.Streams
	ranges := map[int64]positionRange{}
	next := 0
	for next < len(cands) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var steps []streamStep
		var merged []positionRange
		err := s.Update(ctx, func(tx *Tx) error {
			steps, merged = steps[:0], merged[:0]
			hz, err := s.readHorizon(ctx, tx)
			if err != nil {
				return err
			}
			var positions []int64
			for i := next; i < len(cands) && len(positions) < opts.BatchSize; i++ {
				c := cands[i]
				// The stream may have moved since the plan: never past
				// where its reads start, never its newest event.
				now, err := s.ex.RemovableBefore(ctx, tx, c.tenant, c.stream)
				if err != nil {
					return fmt.Errorf("scavenge: stream %q: %w", c.stream, mapErr(err))
				}
				var st streamStep
				positions, st, err = s.walkStream(ctx, tx, c, min(c.hi, now), hz, opts.BatchSize-len(positions), positions)
				if err != nil {
					return err
				}
				st.idx = i
				steps = append(steps, st)
			}
			if len(positions) == 0 {
				return nil
			}
			b := &scavengeBatch{positions: positions}
			if err := b.load(ctx, tx); err != nil {
				return err
			}
			for _, step := range scrubSteps {
				if err := step.run(ctx, tx, b); err != nil {
					return fmt.Errorf("scavenge: %s: %w", step.name, err)
				}
			}
			merged = b.ranges
			return nil
		})
		if err != nil {
			return err
		}
		removed := int64(0)
		for _, st := range steps {
			c := &cands[st.idx]
			if st.n > 0 {
				removed += st.n
				c.lo = st.to + 1
				j, ok := streams[st.idx]
				if !ok {
					j = len(res.Streams)
					streams[st.idx] = j
					res.Streams = append(res.Streams, scavengedStream{Tenant: c.tenant, Stream: c.stream, From: st.from})
				}
				res.Streams[j].To = st.to
				res.Streams[j].Count += st.n
			}
			if st.held != nil {
				holds.add(*st.held)
			}
			if st.done || c.lo >= c.hi {
				next = st.idx + 1
			}
		}
		if len(steps) == 0 {
			break
		}
		if removed > 0 {
			res.Batches++
			res.Removed += removed
			for _, r := range merged {
				ranges[r.From] = r
			}
			if opts.Progress != nil {
				opts.Progress(res.Removed, total)
			}
		}
	}
	for _, r := range ranges {
		res.Ranges = append(res.Ranges, r)
	}
	slices.SortFunc(res.Ranges, func(a, b positionRange) int { return int(a.From - b.From) })
	// A later merge may have swallowed an earlier run: keep the widest.
	out := res.Ranges[:0]
	for _, r := range res.Ranges {
		if n := len(out); n > 0 && r.From <= out[n-1].To {
			out[n-1].To = max(out[n-1].To, r.To)
			continue
		}
		out = append(out, r)
	}
	res.Ranges = out
	return nil
}

// scavengeBatch is the events one transaction removes. While the scrub
// steps run, their positions are in the temporary table
// temp.scavenge_batch and the events are still in the log.
type scavengeBatch struct {
	positions []int64
	ranges    []positionRange // the removed ranges as recorded, merged
}

// load puts the batch's positions in temp.scavenge_batch.
func (b *scavengeBatch) load(ctx context.Context, tx *Tx) error {
	if err := tx.s.ex.LoadScavengeBatch(ctx, tx, b.positions); err != nil {
		return fmt.Errorf("scavenge: %w", err)
	}
	return nil
}

// scrubStep is one thing a batch's transaction does with the events it
// removes. The steps run in order, in the transaction that removes the
// events, while the events are still in the log and their positions in
// temp.scavenge_batch.
type scrubStep struct {
	name string
	run  func(ctx context.Context, tx *Tx, b *scavengeBatch) error
}

// scrubSteps are the batch's steps. A step that removes what else goes
// with removed events (erased ciphertext, destroyed keys) goes before
// "delete the events", so that it can still read them.
var scrubSteps = []scrubStep{
	{"record the removed event ids", recordRemovedIDs},
	{"record the removed positions", recordRemovedRanges},
	{"delete the outbox rows", deleteBatchOutbox},
	{"delete the events", deleteBatchEvents},
}

func recordRemovedIDs(ctx context.Context, tx *Tx, b *scavengeBatch) error {
	return tx.s.ex.RecordRemovedIDs(ctx, tx)
}

// recordRemovedRanges records the batch's runs of consecutive positions,
// each merged with a removed range it touches, and raises the position
// floor to the head: the writer hands out positions above both the
// highest stored one and the floor, so no position handed out so far is
// handed out again, even once the events that had it are gone.
func recordRemovedRanges(ctx context.Context, tx *Tx, b *scavengeBatch) error {
	if err := tx.s.ex.RaisePositionFloor(ctx, tx); err != nil {
		return err
	}
	ps := slices.Clone(b.positions)
	slices.Sort(ps)
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		from, to, err := tx.s.ex.MergeRemovedRange(ctx, tx, ps[i], ps[j], tx.now)
		if err != nil {
			return mapErr(err)
		}
		b.ranges = append(b.ranges, positionRange{From: from, To: to})
		i = j + 1
	}
	return nil
}

func deleteBatchOutbox(ctx context.Context, tx *Tx, b *scavengeBatch) error {
	return tx.s.ex.DeleteBatchOutbox(ctx, tx)
}

func deleteBatchEvents(ctx context.Context, tx *Tx, b *scavengeBatch) error {
	n, err := tx.s.ex.DeleteBatchEvents(ctx, tx)
	if err != nil {
		return err
	}
	if n != int64(len(b.positions)) {
		return fmt.Errorf("deleted %d events for %d positions", n, len(b.positions))
	}
	return nil
}

// idRemoved reports whether a scavenge removed the event that had id, on
// the writer's connection (inside its transaction).
func (s *Store) idRemoved(tenant, id string) (bool, error) {
	removed, err := s.ex.IDRemoved(bg, s.wconn, tenant, id)
	return removed, mapErr(err)
}

func fileSize(path string) (int64, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	return fi.Size(), true
}
