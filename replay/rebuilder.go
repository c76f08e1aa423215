package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/leasing"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// Batch sizing when Options.BatchSize is 0: start at firstBatch events a
// transaction, double while a batch holds the writer for less than
// batchHold/2, halve when it holds it for more than batchHold, within
// [minBatch, maxBatch]. Appends wait for the writer while a batch holds
// it, so this bounds what a rebuild adds to their latency, while a fast
// read model gets big batches (a commit, with its fsync, costs as much as
// applying a thousand events of the catalog).
const (
	firstBatch = 1000
	minBatch   = 100
	maxBatch   = 10_000
	batchHold  = 25 * time.Millisecond
)

// maxSwapAttempts bounds how often the swap gives way to appends arriving
// faster than the final catch-up inside it may apply (a batch): after that
// it applies all of them in the swap's transaction.
const maxSwapAttempts = 8

// errTooFarBehind: more than a batch arrived since the catch-up; catch up
// outside the swap's transaction first.
var errTooFarBehind = errors.New("too far behind the head to swap")

type rebuilder struct {
	s     *store.Store
	p     projection.Projection
	o     Options
	log   hclog.Logger
	lease store.Lease // h.Lease(), for the fenced writes
	h     *leasing.Holder

	start time.Time
	size  atomic.Int64 // events a batch; the read-ahead goroutine reads it

	row      projrow.Rebuild   // as committed
	shadows  map[string]string // declared table -> shadow name
	total    int64             // matching events up to the target
	verified int64             // matching events up to the watermark, all in the shadow
	now      int64             // events applied by this run
	phase    Phase
	target   int64

	trace tracing.Config
	span  trace.Span // the rebuild's span; nil when tracing is off
}

func (r *rebuilder) release() {
	r.h.Release(5 * time.Second)
}

func (r *rebuilder) progress() {
	r.spanProgress()
	if r.o.Progress == nil {
		return
	}
	rate := 0.0
	if el := time.Since(r.start).Seconds(); el > 0 {
		rate = float64(r.now) / el
	}
	r.o.Progress(Progress{Phase: r.phase, Done: r.row.Applied, Total: r.total, Rate: rate, Position: r.row.Checkpoint, Target: r.target})
}

func (r *rebuilder) run(ctx context.Context) (Result, error) {
	res := Result{Projection: r.p.Name, DryRun: r.o.DryRun}
	head, err := r.s.Head(ctx)
	if err != nil {
		return res, err
	}
	watermark := head
	if r.o.DryRun {
		// Compare at the live checkpoint: a live read model that lags is
		// behind, not drifted.
		live, err := projection.Records(r.s).Checkpoint(ctx, r.p.Name)
		if err != nil {
			return res, err
		}
		watermark = min(head, live)
	}
	if err := r.begin(ctx, watermark, &res); err != nil {
		return res, err
	}
	res.Generation, res.Watermark = r.row.Generation, watermark
	r.log.Info("rebuilding", "generation", r.row.Generation, "from", r.row.Checkpoint, "watermark", watermark, "dry_run", r.o.DryRun)

	// Rebuild up to the watermark, then prove it: the shadow is at the
	// watermark and holds as many events as the log has up to it, counted
	// apart from the reads that fed it.
	if r.total, err = projection.Rebuilds(r.s).CountEvents(ctx, 0, watermark, r.p.EventTypes()); err != nil {
		return res, err
	}
	r.phase, r.target = PhaseRebuild, watermark
	r.progress()
	if err := r.applyUpTo(ctx, watermark); err != nil {
		return res, err
	}
	if r.row.Checkpoint != watermark || r.row.Applied != r.total {
		return res, &VerifyError{Projection: r.p.Name, Checkpoint: r.row.Checkpoint, Watermark: watermark, Applied: r.row.Applied, Expected: r.total}
	}
	r.verified = r.total
	r.log.Info("shadow verified at the watermark", "watermark", watermark, "events", r.total)

	if r.o.DryRun {
		err = r.compare(ctx, watermark, &res)
	} else {
		err = r.swap(ctx, watermark)
		res.Swapped = err == nil
	}
	res.Checkpoint, res.Applied, res.AppliedNow = r.row.Checkpoint, r.row.Applied, r.now
	if err != nil {
		return res, err
	}
	r.phase = PhaseDone
	r.progress()
	return res, nil
}

// begin resumes the shadow an earlier run left, or starts a new
// generation (from scratch, or when there is none or it is damaged), and
// records this run's watermark.
func (r *rebuilder) begin(ctx context.Context, watermark int64, res *Result) error {
	return r.s.Update(ctx, func(tx *store.Tx) error {
		if err := store.Bookkeeping(inside.Key{}, tx).CheckFence(ctx, r.lease); err != nil {
			return err
		}
		row, found, err := store.Bookkeeping(inside.Key{}, tx).LoadRebuild(ctx, r.p.Name)
		if err != nil {
			return err
		}
		resume := found && !r.o.FromScratch
		if resume {
			// A shadow table that went missing leaves the checkpoint
			// meaningless: start over.
			for _, t := range r.p.Tables {
				name := projection.ShadowTable(t.Name, row.Generation)
				exists, err := tx.TableExists(ctx, name)
				if err != nil {
					return err
				}
				if !exists {
					r.log.Warn("a shadow table of the unfinished rebuild is gone; starting from scratch", "table", name)
					resume = false
					break
				}
			}
		}
		if resume && r.o.DryRun && row.Checkpoint > watermark {
			return fmt.Errorf("replay %s: the shadow an unfinished replay left is at position %d, ahead of the live read model's checkpoint %d, so the two cannot be compared: let the projection catch up, or run the dry run from scratch",
				r.p.Name, row.Checkpoint, watermark)
		}
		if found && !resume {
			if err := r.dropShadowsTx(ctx, tx, row.Generation); err != nil {
				return err
			}
		}
		if resume {
			res.Resumed, res.ResumedFrom = true, row.Checkpoint
			r.log.Info("resuming an unfinished rebuild", "generation", row.Generation, "from", row.Checkpoint, "applied", row.Applied)
		} else {
			gen, err := store.Bookkeeping(inside.Key{}, tx).NewRebuildGeneration(ctx, r.p.Name)
			if err != nil {
				return err
			}
			row = projrow.Rebuild{Projection: r.p.Name, Generation: gen}
		}
		row.Watermark = watermark
		r.shadows = make(map[string]string, len(r.p.Tables))
		for _, t := range r.p.Tables {
			r.shadows[t.Name] = projection.ShadowTable(t.Name, row.Generation)
		}
		if err := projection.Rebuilding(inside.Key{}, &r.p).CreateTables(ctx, r.s, tx, r.shadows); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).SaveRebuild(ctx, row); err != nil {
			return err
		}
		r.row = row
		return nil
	})
}

// dropShadowsTx drops a generation's shadow tables, the last declared
// first (a later table may refer to an earlier one).
func (r *rebuilder) dropShadowsTx(ctx context.Context, tx *store.Tx, gen int64) error {
	for _, t := range slices.Backward(r.p.Tables) {
		if err := store.Bookkeeping(inside.Key{}, tx).DropTable(ctx, projection.ShadowTable(t.Name, gen)); err != nil {
			return err
		}
	}
	return nil
}

// renew renews the rebuild lease when a third of its TTL has passed.
func (r *rebuilder) renew(ctx context.Context) error {
	l, err := r.h.RenewAfter(ctx, r.o.LeaseTTL/3)
	if err != nil {
		return fmt.Errorf("replay %s: %w", r.p.Name, err)
	}
	r.lease = l
	return nil
}

// read reads up to limit matching events after from and no further than
// target, into buf, outside any write transaction. next is the position
// the shadow reaches with them: target when every matching event up to it
// is in hand.
func (r *rebuilder) read(ctx context.Context, from, target int64, limit int, buf []envelope.Event) (events []envelope.Event, next int64, err error) {
	events = buf[:0]
	for e, err := range r.s.ReadAll(ctx, store.ReadAllOptions{From: from + 1, Limit: limit, Types: r.p.EventTypes()}) {
		if err != nil {
			return nil, 0, err
		}
		if e.Position > target {
			break
		}
		events = append(events, e)
	}
	if err := store.RequireData("rebuild of "+r.p.Name, events...); err != nil {
		return nil, 0, err // applied without its data, the shadow would lack it
	}
	next = target
	if len(events) == limit {
		next = events[len(events)-1].Position
	}
	return events, next, nil
}

// readBatch is a batch the read-ahead goroutine read.
type readBatch struct {
	from, next int64
	events     []envelope.Event
	err        error
}

// applyUpTo applies every matching event up to target to the shadow,
// batch by batch. A goroutine reads the next batch (on the read pool)
// while the current one is applied (on the writer), so the two overlap.
func (r *rebuilder) applyUpTo(ctx context.Context, target int64) error {
	if r.row.Checkpoint >= target {
		return nil
	}
	rctx, cancel := context.WithCancel(ctx)
	batches := make(chan readBatch, 1)
	free := make(chan []envelope.Event, 3)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(batches)
		from := r.row.Checkpoint
		for from < target {
			var buf []envelope.Event
			select {
			case buf = <-free:
			default:
			}
			evs, next, err := r.read(rctx, from, target, int(r.size.Load()), buf)
			select {
			case batches <- readBatch{from: from, next: next, events: evs, err: err}:
			case <-rctx.Done():
				return
			}
			if err != nil {
				return
			}
			from = next
		}
	})
	defer func() {
		cancel()
		wg.Wait()
	}()
	for b := range batches {
		if b.err != nil {
			return b.err
		}
		if b.from != r.row.Checkpoint {
			return fmt.Errorf("replay %s: read ahead from %d, but the shadow is at %d", r.p.Name, b.from, r.row.Checkpoint)
		}
		if err := r.applyBatch(ctx, b.events, b.next); err != nil {
			return err
		}
		select {
		case free <- b.events:
		default:
		}
	}
	return ctx.Err()
}

// applyBatch applies events to the shadow and moves it to next in one
// transaction, then adapts the batch size to the time it held the writer.
func (r *rebuilder) applyBatch(ctx context.Context, events []envelope.Event, next int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.renew(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	var row projrow.Rebuild
	err := r.s.Update(ctx, func(tx *store.Tx) error {
		var err error
		row, err = r.applyTx(ctx, tx, events, next)
		return err
	})
	if err != nil {
		return err
	}
	r.adapt(time.Since(t0))
	r.row = row
	r.now += int64(len(events))
	r.progress()
	return nil
}

func (r *rebuilder) adapt(held time.Duration) {
	if r.o.BatchSize > 0 {
		return
	}
	n := r.size.Load()
	switch {
	case held < batchHold/2 && n < maxBatch:
		r.size.Store(min(2*n, maxBatch))
	case held > batchHold && n > minBatch:
		r.size.Store(max(n/2, minBatch))
	}
}

// applyTx applies events to the shadow and moves the rebuild row to next,
// inside tx, after checking the lease and that the row is where this run
// left it.
func (r *rebuilder) applyTx(ctx context.Context, tx *store.Tx, events []envelope.Event, next int64) (projrow.Rebuild, error) {
	if err := store.Bookkeeping(inside.Key{}, tx).CheckFence(ctx, r.lease); err != nil {
		return projrow.Rebuild{}, err
	}
	row, ok, err := store.Bookkeeping(inside.Key{}, tx).LoadRebuild(ctx, r.p.Name)
	if err != nil {
		return projrow.Rebuild{}, err
	}
	if !ok || row.Generation != r.row.Generation || row.Checkpoint != r.row.Checkpoint {
		return projrow.Rebuild{}, fmt.Errorf("replay %s: the rebuild's state changed under this replay (generation %d at %d, found %+v)",
			r.p.Name, r.row.Generation, r.row.Checkpoint, row)
	}
	if err := r.apply(ctx, tx, events); err != nil {
		return projrow.Rebuild{}, err
	}
	row.Checkpoint = max(next, row.Checkpoint)
	row.Applied += int64(len(events))
	if err := store.Bookkeeping(inside.Key{}, tx).SaveRebuild(ctx, row); err != nil {
		return projrow.Rebuild{}, err
	}
	return row, nil
}

// apply applies events to the shadow, with the projection's ApplyBatch
// when it has one. A failure is a *HandlerError naming the event: when
// ApplyBatch fails, the batch (undone) is applied again event by event
// with Apply to find it.
func (r *rebuilder) apply(ctx context.Context, tx *store.Tx, events []envelope.Event) error {
	err := projection.Rebuilding(inside.Key{}, &r.p).ApplyBatch(ctx, tx, r.shadows, events)
	if err == nil {
		return nil
	}
	var ee *projection.EventError
	if !errors.As(err, &ee) {
		batchErr := err
		err = projection.Rebuilding(inside.Key{}, &r.p).ApplyEvents(ctx, tx, r.shadows, events)
		if err == nil {
			return fmt.Errorf("replay %s: ApplyBatch failed on positions %d-%d, but Apply succeeded on each of them: ApplyBatch must do what Apply does: %w",
				r.p.Name, events[0].Position, events[len(events)-1].Position, batchErr)
		}
		if !errors.As(err, &ee) {
			return err
		}
	}
	return &HandlerError{Projection: r.p.Name, Position: ee.Position, EventID: ee.EventID, Type: ee.Type, Err: ee.Err}
}

// catchUp applies batches outside the final transaction until the shadow
// is at most a batch behind target(), which it reads again each time.
func (r *rebuilder) catchUp(ctx context.Context, watermark int64, target func() (int64, error)) error {
	for {
		t, err := target()
		if err != nil {
			return err
		}
		r.target = t
		if err := r.countTotal(ctx, watermark, t); err != nil {
			return err
		}
		if t-r.row.Checkpoint <= r.size.Load() {
			return nil
		}
		if err := r.applyUpTo(ctx, t); err != nil {
			return err
		}
	}
}

// countTotal sets the progress total: the verified count up to the
// watermark plus the matching events from there to target.
func (r *rebuilder) countTotal(ctx context.Context, watermark, target int64) error {
	n, err := projection.Rebuilds(r.s).CountEvents(ctx, watermark, target, r.p.EventTypes())
	if err != nil {
		return err
	}
	r.total = r.verified + n
	return nil
}

// finalTx brings the shadow to target inside the final transaction
// (refusing with errTooFarBehind when more than a batch is left, unless
// force) and checks that, from the watermark on, it applied exactly the
// matching events the log has.
func (r *rebuilder) finalTx(ctx context.Context, tx *store.Tx, watermark, target int64, force bool) (projrow.Rebuild, error) {
	limit := int(r.size.Load())
	if force {
		limit = 0
	}
	var events []envelope.Event
	// On the read pool: nothing can commit while tx holds the write lock,
	// so this reads the log as tx sees it.
	for e, err := range r.s.ReadAll(ctx, store.ReadAllOptions{From: r.row.Checkpoint + 1, Types: r.p.EventTypes()}) {
		if err != nil {
			return projrow.Rebuild{}, err
		}
		if e.Position > target {
			break
		}
		if limit > 0 && len(events) == limit {
			return projrow.Rebuild{}, errTooFarBehind
		}
		events = append(events, e)
	}
	if err := store.RequireData("rebuild of "+r.p.Name, events...); err != nil {
		return projrow.Rebuild{}, err
	}
	row, err := r.applyTx(ctx, tx, events, target)
	if err != nil {
		return projrow.Rebuild{}, err
	}
	since, err := projection.Rebuilds(r.s).CountEvents(ctx, watermark, target, r.p.EventTypes())
	if err != nil {
		return projrow.Rebuild{}, err
	}
	if row.Checkpoint != target || row.Applied != r.verified+since {
		return projrow.Rebuild{}, &VerifyError{Projection: r.p.Name, Checkpoint: row.Checkpoint, Watermark: target, Applied: row.Applied, Expected: r.verified + since}
	}
	return row, nil
}

// swap catches the shadow up to the live head and swaps it in: in one
// transaction, the last events, the live tables dropped, the shadows
// renamed to their names, the projection's checkpoint set to the
// shadow's, the rebuild row deleted. The live runner's next batch finds
// its checkpoint moved (its compare-and-set fails), discards what it read
// and goes on from the new checkpoint.
func (r *rebuilder) swap(ctx context.Context, watermark int64) error {
	head := func() (int64, error) { return r.s.Head(ctx) }
	for attempt := 1; ; attempt++ {
		r.phase = PhaseCatchUp
		if err := r.catchUp(ctx, watermark, head); err != nil {
			return err
		}
		if err := r.renew(ctx); err != nil {
			return err
		}
		r.phase = PhaseSwap
		r.progress()
		var row projrow.Rebuild
		err := r.s.Update(ctx, func(tx *store.Tx) error {
			// No commit can land while this transaction holds the write
			// lock: the head read now is the head at the swap.
			h, err := r.s.Head(ctx)
			if err != nil {
				return err
			}
			if row, err = r.finalTx(ctx, tx, watermark, h, attempt >= maxSwapAttempts); err != nil {
				return err
			}
			for _, t := range slices.Backward(r.p.Tables) {
				if err := store.Bookkeeping(inside.Key{}, tx).DropTable(ctx, t.Name); err != nil {
					return err
				}
			}
			for _, t := range r.p.Tables {
				if err := store.Bookkeeping(inside.Key{}, tx).RenameTable(ctx, r.shadows[t.Name], t.Name); err != nil {
					return err
				}
			}
			if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, r.p.Name, row.Checkpoint, nil); err != nil {
				return err
			}
			if err := r.settleTx(ctx, tx, row.Checkpoint); err != nil {
				return err
			}
			return store.Bookkeeping(inside.Key{}, tx).DeleteRebuild(ctx, r.p.Name)
		})
		if errors.Is(err, errTooFarBehind) {
			r.log.Debug("appends outran the swap; catching up first", "attempt", attempt)
			continue
		}
		if err != nil {
			return err
		}
		r.now += row.Applied - r.row.Applied
		r.row = row
		r.target, r.total = row.Checkpoint, row.Applied
		r.log.Info("swapped the rebuilt read model in", "generation", row.Generation, "checkpoint", row.Checkpoint, "events", row.Applied)
		return nil
	}
}

// settleTx registers the projection if it never ran, and, since the
// rebuilt read model applied every event up to cp, resolves its open
// quarantine entries up to there and lifts a stop.
func (r *rebuilder) settleTx(ctx context.Context, tx *store.Tx, cp int64) error {
	// Read on the read pool: nothing can commit while tx holds the lock.
	rec, err := projection.Records(r.s).Get(ctx, r.p.Name)
	switch {
	case errors.Is(err, store.ErrNotFound), err == nil && rec.Status == projection.StatusStopped:
		if err := store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, r.p.Name, string(projection.StatusActive), ""); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	open, err := projection.Quarantine(r.s).Events(ctx, projection.QuarantineFilter{Consumer: r.p.Name, Open: true})
	if err != nil {
		return err
	}
	for _, q := range open {
		if q.Position > 0 && q.Position <= cp {
			if err := store.Bookkeeping(inside.Key{}, tx).ResolveQuarantine(ctx, r.p.Name, q.Position, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// compare (dry run) catches the shadow up to the live checkpoint and, in
// one transaction, brings it exactly there and compares every table with
// its live twin, then drops the shadow.
func (r *rebuilder) compare(ctx context.Context, watermark int64, res *Result) error {
	live := func() (int64, error) { return projection.Records(r.s).Checkpoint(ctx, r.p.Name) }
	for attempt := 1; ; attempt++ {
		r.phase = PhaseCatchUp
		if err := r.catchUp(ctx, watermark, live); err != nil {
			return err
		}
		if err := r.renew(ctx); err != nil {
			return err
		}
		r.phase = PhaseCompare
		r.progress()
		var (
			row   projrow.Rebuild
			drift Drift
		)
		err := r.s.Update(ctx, func(tx *store.Tx) error {
			drift = Drift{}
			cp, err := store.Bookkeeping(inside.Key{}, tx).Checkpoint(ctx, r.p.Name)
			if err != nil {
				return err
			}
			if cp < r.row.Checkpoint {
				return fmt.Errorf("replay %s: the live checkpoint went back to %d, behind the shadow at %d; run the dry run again", r.p.Name, cp, r.row.Checkpoint)
			}
			if row, err = r.finalTx(ctx, tx, watermark, cp, attempt >= maxSwapAttempts); err != nil {
				return err
			}
			for _, t := range r.p.Tables {
				d, err := store.Bookkeeping(inside.Key{}, tx).CompareTables(ctx, t.Name, r.shadows[t.Name])
				if err != nil {
					return err
				}
				drift.Tables = append(drift.Tables, TableDrift{Table: t.Name, TableDiff: d})
				drift.Missing += d.Missing
				drift.Extra += d.Extra
				drift.Different += d.Different
			}
			drift.Total = drift.Missing + drift.Extra + drift.Different
			if err := r.dropShadowsTx(ctx, tx, row.Generation); err != nil {
				return err
			}
			return store.Bookkeeping(inside.Key{}, tx).DeleteRebuild(ctx, r.p.Name)
		})
		if errors.Is(err, errTooFarBehind) {
			continue
		}
		if err != nil {
			return err
		}
		r.now += row.Applied - r.row.Applied
		r.row = row
		r.target, r.total = row.Checkpoint, row.Applied
		res.Drift = drift
		r.log.Info("compared the rebuilt read model with the live one", "checkpoint", row.Checkpoint, "drift", drift.Total)
		return nil
	}
}
