package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/internal/inside"

	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// work runs batches until ctx ends, the lease is lost, or Once is done.
//
// It overlaps what it can without giving up order: while a full batch is
// published it reads the next one (the rows after it), and while the next
// one is published it marks the last one. Both only when the batch went
// out whole: a failure in a stream must hold back the stream's later
// rows, so the batch is marked first and the next read starts from the
// beginning, where it sees the failure.
func (r *Relay) work(ctx context.Context, lease store.Lease) (err error) {
	var (
		next     []outbox.Row
		fetched  bool
		settling chan settled // the last batch's marks, being written
	)
	// join waits for the last batch's marks and handles their report.
	join := func() error {
		if settling == nil {
			return nil
		}
		s := <-settling
		settling = nil
		return r.handle(ctx, s.rep, nil)
	}
	defer func() {
		if jerr := join(); err == nil && !errors.Is(jerr, errSettle) {
			err = jerr
		}
	}()
	for {
		changed := r.st.Changed()
		now := r.opts.clock.Now()
		rows := next
		if !fetched {
			var err error
			rows, err = outbox.For(r.st).Read(ctx, outbox.ReadOptions{Limit: r.opts.BatchSize, Now: now})
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if dead, derr := r.deadLetterForeignKey(ctx, lease, err); dead || derr != nil {
					if derr != nil {
						return derr
					}
					continue // read again: the event is parked, its stream with it
				}
				if errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrMasterKey) {
					return err // a wrong master key does not get better by waiting
				}
				r.log.Warn("cannot read the outbox; trying again", "error", err)
				if err := r.sleep(ctx, r.opts.PollInterval); err != nil {
					return err
				}
				continue
			}
		}
		next, fetched = nil, false
		if err := requireData(rows); err != nil {
			r.log.Error("refusing to publish an encrypted event without its data", "error", err)
			return err // nothing of the batch published, its rows left as they are
		}
		if len(rows) == 0 {
			if err := join(); err != nil {
				if errors.Is(err, errSettle) {
					continue
				}
				return err
			}
			if r.opts.Once {
				done, err := r.drained(ctx)
				if done || err != nil {
					return err
				}
			}
			if err := r.idle(ctx, changed); err != nil {
				return err
			}
			continue
		}
		var prefetch chan prefetched
		if len(rows) == r.opts.BatchSize {
			prefetch = make(chan prefetched, 1)
			after := rows[len(rows)-1].Event.Position
			go func() {
				rows, err := outbox.For(r.st).Read(ctx, outbox.ReadOptions{After: after, Limit: r.opts.BatchSize, Now: now})
				prefetch <- prefetched{rows, err}
			}()
		}
		o, perr := r.publishBatch(ctx, lease, rows)
		var pf prefetched
		if prefetch != nil {
			pf = <-prefetch
		}
		// The last batch's marks land before this one's.
		if err := join(); err != nil {
			if errors.Is(err, errSettle) {
				continue // read again from the start
			}
			return err
		}
		if perr != nil {
			return perr // ctx ended: the batch is abandoned, its rows stay pending
		}
		if o.whole() && pf.err == nil && len(pf.rows) > 0 {
			next, fetched = pf.rows, true
			settling = make(chan settled, 1)
			go func() { settling <- settled{r.settle(ctx, lease, o)} }()
			continue
		}
		if err := r.handle(ctx, r.settle(ctx, lease, o), o); err != nil && !errors.Is(err, errSettle) {
			return err
		}
	}
}

// requireData refuses a batch holding an event read without the master
// key that decrypts it: published, it would reach the broker without its
// data (see store.RequireData).
func requireData(rows []outbox.Row) error {
	for i := range rows {
		if err := store.RequireData("relay", rows[i].Event); err != nil {
			return err
		}
	}
	return nil
}

// prefetched is the next batch, read while one is published.
type prefetched struct {
	rows []outbox.Row
	err  error
}

// settled is a batch's report once its marks were written (or refused).
type settled struct{ rep BatchReport }

// errSettle: the store refused a batch's marks for a reason other than
// the lease (busy past its timeout, say); the relay waited and goes on.
var errSettle = errors.New("batch not settled")

// handle acts on a settled batch: reports it, ends the work when the
// lease was lost or the destination is misconfigured, and backs off while
// the destination is unreachable. o is nil for a batch that went out
// whole.
func (r *Relay) handle(ctx context.Context, rep BatchReport, o *outcome) error {
	if r.opts.OnBatch != nil {
		r.opts.OnBatch(rep)
	}
	switch {
	case errors.Is(rep.Err, store.ErrStaleFence):
		return errLeaseLost
	case rep.Err != nil && ctx.Err() != nil:
		return ctx.Err()
	case rep.Err != nil:
		// Its rows stay pending and go out again, deduped.
		r.log.Warn("cannot settle a batch; its rows stay pending", "error", rep.Err)
		if err := r.sleep(ctx, r.opts.PollInterval); err != nil {
			return err
		}
		return errSettle
	case o != nil && o.fatal != nil:
		return o.fatal
	case o != nil && o.down != nil:
		return r.backOff(ctx, o.down)
	}
	if r.backoff > 0 {
		r.mu.Lock()
		since := r.stats.UnreachableSince
		r.stats.UnreachableSince, r.stats.UnreachableError = time.Time{}, ""
		r.mu.Unlock()
		r.log.Info("destination reachable again", "unreachable_for", r.opts.clock.Now().Sub(since).Round(time.Millisecond))
		r.backoff, r.downErr = 0, nil
		r.setReason("")
	}
	return nil
}

// idle waits for a commit, a retry falling due, or the poll interval.
func (r *Relay) idle(ctx context.Context, changed <-chan struct{}) error {
	wake := r.opts.clock.Now().Add(r.opts.PollInterval)
	if next, ok, err := outbox.For(r.st).NextAttempt(ctx); err == nil && ok && next.Before(wake) {
		wake = next
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
	case <-r.opts.clock.At(wake):
	}
	return nil
}

// drained tells a Once run whether it is done: nothing pending but dead
// letters (done), or only rows parked behind them (an *IncompleteError,
// since waiting will not help).
func (r *Relay) drained(ctx context.Context) (bool, error) {
	st, err := outbox.For(r.st).Stats(ctx)
	if err != nil {
		return false, nil // look again later
	}
	left := st.Pending - st.DeadLetters
	switch {
	case left == 0:
		if st.DeadLetters > 0 {
			r.log.Warn("outbox drained; dead letters wait for an operator", "dead_letters", st.DeadLetters)
		} else {
			r.log.Info("outbox drained")
		}
		return true, nil
	case left == st.Parked-st.DeadLetters:
		return true, &IncompleteError{Pending: left, Reason: fmt.Sprintf(
			"they wait behind %d dead letter(s) in %d parked stream(s): see eventlite dlq list, then dlq retry or dlq discard",
			st.DeadLetters, st.ParkedStreams)}
	}
	next, ok, err := outbox.For(r.st).NextAttempt(ctx)
	if err == nil && ok {
		r.setReason(fmt.Sprintf("rows that failed wait for their next attempt (the next at %s)", next.UTC().Format(time.RFC3339)))
	}
	return false, nil
}

// backOff waits while the destination is unreachable: capped exponential
// backoff with jitter. No attempt is counted against any event. It warns
// once when the destination goes down, not per round.
func (r *Relay) backOff(ctx context.Context, down error) error {
	r.mu.Lock()
	if r.backoff == 0 {
		r.stats.UnreachableSince = r.opts.clock.Now()
	}
	r.stats.UnreachableError = down.Error()
	r.stats.Unreachable++
	r.mu.Unlock()
	if r.backoff == 0 {
		r.backoff = r.opts.BackoffBase
		r.log.Warn("destination unreachable; backing off (no attempts are counted)", "error", down)
	} else {
		r.backoff = min(r.backoff*2, r.opts.BackoffMax)
		if r.downErr == nil || r.downErr.Error() != down.Error() {
			r.log.Info("destination still unreachable", "error", down)
		}
	}
	r.downErr = down
	r.setReason("the destination is unreachable: " + down.Error())
	return r.sleep(ctx, r.jitter(r.backoff))
}

// jitter returns a duration in [d/2, d].
func (r *Relay) jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(r.rnd.Int64N(int64(d/2)+1))
}

// retryDelay is the wait after an event's n-th transient failure.
func (r *Relay) retryDelay(n int) time.Duration {
	d := r.opts.RetryBase
	for i := 1; i < n && d < r.opts.RetryMax; i++ {
		d *= 2
	}
	return r.jitter(min(d, r.opts.RetryMax))
}

// outcome is a published batch, classified, not yet settled.
type outcome struct {
	rep        BatchReport
	rows       []outbox.Row
	pub        []outboxmark.Published
	fail, dead []outboxmark.Failure
	down       error // the destination was unreachable
	fatal      error // the destination is misconfigured
}

// whole reports whether every row of the batch was published.
func (o *outcome) whole() bool {
	return o.down == nil && o.fatal == nil && len(o.pub) == len(o.rows)
}

// publishBatch publishes rows and classifies the results; it writes
// nothing. It fails only when ctx ended (the batch is abandoned) or the
// publisher broke its contract.
func (r *Relay) publishBatch(ctx context.Context, lease store.Lease, rows []outbox.Row) (*outcome, error) {
	o := &outcome{rows: rows, rep: BatchReport{Token: lease.Token, Rows: len(rows), First: rows[0].Event.Position, Last: rows[len(rows)-1].Event.Position}}
	msgs := make([]Message, len(rows))
	for i := range rows {
		msgs[i].Event = rows[i].Event
	}
	rd := r.startRound(ctx, msgs)
	results := r.pub.Publish(ctx, msgs)
	rd.end(results)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(results) != len(rows) {
		return nil, fmt.Errorf("publish: publisher returned %d results for %d events", len(results), len(rows))
	}
	var (
		transient, unreach []int
		stopped            map[streamKey]bool
	)
	o.pub = make([]outboxmark.Published, 0, len(rows))
	for i := range rows {
		e := &rows[i].Event
		k := keyOf(e)
		if stopped[k] {
			// An earlier event of its stream failed: it waits, even if
			// the destination took it (the redelivery is deduped).
			o.rep.Waiting++
			continue
		}
		res := results[i]
		if res.Err == nil {
			o.pub = append(o.pub, outboxmark.Published{Position: e.Position, BrokerSequence: res.Sequence})
			if res.Duplicate {
				o.rep.Duplicates++
			}
			continue
		}
		if stopped == nil {
			stopped = make(map[streamKey]bool)
		}
		stopped[k] = true
		switch {
		case errors.Is(res.Err, ErrNotAttempted):
			o.rep.Waiting++
		case ClassOf(res.Err) == Permanent:
			o.dead = append(o.dead, outboxmark.Failure{Position: e.Position, Error: res.Err.Error()})
		case ClassOf(res.Err) == Unreachable:
			unreach = append(unreach, i)
		case ClassOf(res.Err) == Fatal:
			o.fatal = res.Err
			o.rep.Waiting++
		default:
			transient = append(transient, i)
		}
	}
	// A publish that found the destination unreachable while another
	// request to it succeeded in this round, and that still answers a
	// ping, failed for its event's sake (say the event makes the sink drop
	// the connection): count the attempt, or it would be retried for ever
	// and every other stream would wait behind the backoff. Otherwise the
	// destination is down: back off, counting nothing.
	if len(unreach) > 0 {
		up := false
		if len(o.pub) > 0 && o.fatal == nil {
			err := r.pub.Ping(ctx)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			up = err == nil
		}
		if up {
			transient = append(transient, unreach...)
		} else {
			o.down = results[unreach[0]].Err
			o.rep.Waiting += len(unreach)
		}
	}
	// Every publish failing is the destination's fault, not the events':
	// ask it whether it is up before counting attempts.
	if len(transient) > 0 && len(o.pub) == 0 && o.down == nil && o.fatal == nil {
		if err := r.pub.Ping(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			o.down = fmt.Errorf("every publish failed (%v) and the destination does not answer: %w", results[transient[0]].Err, err)
			o.rep.Waiting += len(transient)
			transient = nil
		}
	}
	now := r.opts.clock.Now()
	for _, i := range transient {
		row := &rows[i]
		n := row.Attempts + 1
		if n >= r.opts.MaxAttempts {
			o.dead = append(o.dead, outboxmark.Failure{Position: row.Event.Position,
				Error: fmt.Sprintf("gave up after %d attempts: %v", n, results[i].Err)})
			continue
		}
		o.fail = append(o.fail, outboxmark.Failure{Position: row.Event.Position, Error: results[i].Err.Error(),
			NextAttemptAt: now.Add(r.retryDelay(n))})
	}
	o.rep.Down = o.down
	return o, nil
}

// settle writes a batch's outcome in one fenced transaction: rows
// published, failures recorded, dead letters. The store refuses it all
// with ErrStaleFence when the lease was lost.
func (r *Relay) settle(ctx context.Context, lease store.Lease, o *outcome) BatchReport {
	rep := o.rep
	rep.Err = r.st.Update(ctx, func(tx *store.Tx) error {
		n, err := store.Bookkeeping(inside.Key{}, tx).MarkPublished(ctx, lease, o.pub)
		if err != nil {
			return err
		}
		rep.Published = n
		if err := store.Bookkeeping(inside.Key{}, tx).RecordFailure(ctx, lease, o.fail); err != nil {
			return err
		}
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, lease, o.dead)
	})
	if rep.Err != nil {
		rep.Published = 0
		return rep
	}
	rep.Retrying, rep.DeadLettered = len(o.fail), len(o.dead)
	r.record(rep, o.rows, o.fail, o.dead)
	return rep
}

// record logs a settled batch and counts it.
func (r *Relay) record(rep BatchReport, rows []outbox.Row, fail, dead []outboxmark.Failure) {
	r.mu.Lock()
	r.stats.Batches++
	r.stats.Published += int64(rep.Published)
	r.stats.Duplicates += int64(rep.Duplicates)
	r.stats.Retrying += int64(rep.Retrying)
	r.stats.DeadLettered += int64(rep.DeadLettered)
	r.mu.Unlock()
	if len(fail) == 0 && len(dead) == 0 {
		r.log.Debug("batch published", "rows", rep.Rows, "published", rep.Published, "duplicates", rep.Duplicates, "first", rep.First, "last", rep.Last)
		return
	}
	byPos := make(map[int64]*outbox.Row, len(fail)+len(dead))
	for i := range rows {
		byPos[rows[i].Event.Position] = &rows[i]
	}
	for _, f := range fail {
		e := &byPos[f.Position].Event
		r.log.Info("publish failed; will retry", "tenant", e.Tenant, "event_id", e.ID, "stream", e.Stream, "version", e.StreamVersion,
			"attempts", byPos[f.Position].Attempts+1, "next_attempt", f.NextAttemptAt.UTC().Format(time.RFC3339Nano), "error", f.Error)
	}
	for _, f := range dead {
		e := &byPos[f.Position].Event
		r.log.Warn("dead-lettered an event; its stream is parked until eventlite dlq retry or discard",
			"tenant", e.Tenant, "event_id", e.ID, "stream", e.Stream, "version", e.StreamVersion, "position", e.Position, "error", f.Error)
	}
}

// deadLetterForeignKey dead-letters the event of a read that failed on a
// data key wrapped by another master key than the store's (one an older
// eventlite let into the file): no process of the store can open it, so
// it must not hold back the events that can be published. It reports
// whether it did. An event whose key the store's own master key should
// open but does not (an altered key) is not one: the relay stops on it.
func (r *Relay) deadLetterForeignKey(ctx context.Context, lease store.Lease, err error) (bool, error) {
	var me *store.MasterKeyError
	if !errors.As(err, &me) || !me.Foreign() || me.Position <= 0 {
		return false, nil
	}
	msg := fmt.Sprintf("its data key (subject %q, tenant %s) is wrapped by master key %s, not the store's %s: no process of the store can open it; "+
		"forget the subject, or restore a backup taken before the other master key was used", me.Subject, me.Tenant, me.Stored, me.Given)
	derr := r.st.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, lease, []outboxmark.Failure{{Position: me.Position, Error: msg}})
	})
	switch {
	case errors.Is(derr, store.ErrStaleFence):
		return false, errLeaseLost
	case derr != nil:
		return false, derr
	}
	r.log.Error("dead-lettered an event under another master key", "position", me.Position, "tenant", me.Tenant, "subject", me.Subject, "stored", me.Stored, "store", me.Given)
	return true, nil
}
