package store

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Lifecycle deletes and truncates streams, reached with Store.Lifecycle.
// Each call appends a lifecycle event as the stream's next version, in one
// transaction with what it changes (migration 0011), and returns that
// append's result: the version and the ETag move. The stream's events and
// the lifecycle events stay in the log: ReadAll, projections and the
// relay see them.
type Lifecycle struct{ s *Store }

// Lifecycle returns the store's stream handle for deletes and truncates.
func (s *Store) Lifecycle() *Lifecycle { return &Lifecycle{s: s} }

// The lifecycle events' types.
const (
	// TypeStreamDeleted is the tombstone a delete appends; its data is
	// StreamDeleted.
	TypeStreamDeleted = envelope.ReservedTypePrefix + "stream.deleted"
	// TypeStreamTruncated is the event a truncate appends; its data is
	// StreamTruncated.
	TypeStreamTruncated = envelope.ReservedTypePrefix + "stream.truncated"
)

// StreamDeleted is the data of an eventlite.stream.deleted event.
type StreamDeleted struct {
	Reason string `json:"reason"`
	By     string `json:"by"`   // who deleted: the OS user or the token's tenant, never a secret
	Hard   bool   `json:"hard"` // never writable again
}

// StreamTruncated is the data of an eventlite.stream.truncated event.
type StreamTruncated struct {
	Before int64 `json:"before"` // reads start at this version
}

// The streams.deleted column (migration 0011).
const (
	deletedSoft = 1
	deletedHard = 2
)

// DeleteOptions say how to delete a stream.
type DeleteOptions struct {
	// Hard marks the stream as never writable (nor readable) again.
	Hard bool
	// Reason and By go into the tombstone; By names who deleted (the OS
	// user, or the token's tenant), never a secret.
	Reason, By string
	// Expected is the condition on the stream's version; the zero value
	// is Any, which still needs the stream to exist.
	Expected Expected
}

// Delete deletes a tenant's stream: it appends an eventlite.stream.deleted
// tombstone as its next version and drops its snapshots. The stream then
// reads as not found (ErrNotFound) and counts as absent: an append with
// NoStream or Any continues after the tombstone's version, one with
// StreamExists or a version conflicts with actual 0. With Hard the
// stream is never written or read again (ErrStreamDeleted).
//
// A stream that does not exist, or is already soft-deleted, is
// ErrNotFound; a hard-deleted one ErrStreamDeleted; a failed expectation
// a *ConflictError. Any error writes nothing.
func (l *Lifecycle) Delete(ctx context.Context, tenant, stream string, opts DeleteOptions) (AppendResult, error) {
	mark := int64(deletedSoft)
	if opts.Hard {
		mark = deletedHard
	}
	ev, err := envelope.New(TypeStreamDeleted, StreamDeleted{Reason: opts.Reason, By: opts.By, Hard: opts.Hard})
	if err != nil {
		return AppendResult{}, err
	}
	return l.apply(ctx, tenant, stream, opts.Expected, ev, 0, markDeleted(ctx, tenant, stream, mark))
}

// lifecycleOp is the driver's delete or truncate of one stream, which
// runs the store's checks and append (apply) atomically with its own
// read and mark.
type lifecycleOp func(tx *Tx, apply driver.LifecycleApply) error

// markDeleted marks a stream deleted after its tombstone was appended,
// and drops its snapshots.
func markDeleted(ctx context.Context, tenant, stream string, mark int64) lifecycleOp {
	return func(tx *Tx, apply driver.LifecycleApply) error {
		return tx.s.ex.DeleteStream(ctx, tx, tenant, stream, mark, apply)
	}
}

// DeleteStream is Lifecycle.Delete inside an Update closure, so that the
// caller's own writes (an operation ledger row) commit with it. A refused
// delete (not found, hard-deleted, a failed expectation) writes nothing
// and leaves the transaction usable.
func (tx *Tx) DeleteStream(ctx context.Context, tenant, stream string, opts DeleteOptions) (AppendResult, error) {
	if err := tx.check(); err != nil {
		return AppendResult{}, err
	}
	mark := int64(deletedSoft)
	if opts.Hard {
		mark = deletedHard
	}
	ev, err := envelope.New(TypeStreamDeleted, StreamDeleted{Reason: opts.Reason, By: opts.By, Hard: opts.Hard})
	if err != nil {
		return AppendResult{}, err
	}
	l := tx.s.Lifecycle()
	a, err := l.prepare(tenant, stream, opts.Expected, ev)
	if err != nil {
		return AppendResult{}, err
	}
	return l.applyTx(ctx, tx, a, 0, markDeleted(ctx, tenant, stream, mark))
}

// TruncateStream is Lifecycle.Truncate inside an Update closure. A
// refused truncate writes nothing and leaves the transaction usable.
func (tx *Tx) TruncateStream(ctx context.Context, tenant, stream string, before int64, expected Expected) (AppendResult, error) {
	if err := tx.check(); err != nil {
		return AppendResult{}, err
	}
	if before < 2 {
		return AppendResult{}, &envelope.InvalidError{Index: -1, Field: "before", Reason: fmt.Sprintf("%d is below 2: a truncate keeps versions from before on, and version 1 is the first already", before)}
	}
	return tx.s.Lifecycle().truncateTx(ctx, tx, tenant, stream, before, expected)
}

// Truncate truncates a tenant's stream before version before (2 <= before
// <= the stream's version, and not before the version its reads start at
// already): it appends eventlite.stream.truncated {"before":before} as its
// next version, and reads then start at before.
// expected is the condition on the stream's version (Any still needs the
// stream to exist). Another before is an *envelope.InvalidError
// (field "before"); a stream that does not exist or is soft-deleted is
// ErrNotFound, a hard-deleted one ErrStreamDeleted. Any error writes
// nothing.
func (l *Lifecycle) Truncate(ctx context.Context, tenant, stream string, before int64, expected Expected) (AppendResult, error) {
	if err := l.s.rdb.check(); err != nil {
		return AppendResult{}, err
	}
	if before < 2 {
		return AppendResult{}, &envelope.InvalidError{Index: -1, Field: "before", Reason: fmt.Sprintf("%d is below 2: a truncate keeps versions from before on, and version 1 is the first already", before)}
	}
	ev, err := envelope.New(TypeStreamTruncated, StreamTruncated{Before: before})
	if err != nil {
		return AppendResult{}, err
	}
	return l.apply(ctx, tenant, stream, expected, ev, before, setFirstVersion(ctx, tenant, stream, before))
}

// apply checks that the stream exists (and, with before > 0, that before
// is at most its version), then appends ev and marks the stream (op) in
// the same transaction.
func (l *Lifecycle) apply(ctx context.Context, tenant, stream string, expected Expected, ev envelope.Event, before int64, op lifecycleOp) (AppendResult, error) {
	a, err := l.prepare(tenant, stream, expected, ev)
	if err != nil {
		return AppendResult{}, err
	}
	var res AppendResult
	err = l.s.Update(ctx, func(tx *Tx) error {
		r, err := l.applyTx(ctx, tx, a, before, op)
		res = r
		return err
	})
	if err != nil {
		return AppendResult{}, err
	}
	return res, nil
}

// prepare validates a lifecycle event's append outside any transaction.
// The store's own streams are never deleted or truncated.
func (l *Lifecycle) prepare(tenant, stream string, expected Expected, ev envelope.Event) (*appendReq, error) {
	op := "truncate"
	if ev.Type == TypeStreamDeleted {
		op = "delete"
	}
	if err := userStream(op, tenant, stream); err != nil {
		return nil, err
	}
	ev.Source = "eventlite"
	switch expected.kind {
	case expectNoStream:
		return nil, &envelope.InvalidError{Index: -1, Field: "expected", Reason: "no stream never holds: a delete or truncate needs the stream to exist; pass Any, StreamExists or its version"}
	case expectAny:
		// The stream must exist: a lifecycle event never creates one.
		expected = StreamExists
	}
	return l.s.prepareAppendAs(true, tenant, stream, expected, []envelope.Event{ev})
}

// applyTx is apply's part inside the transaction. An error leaves the
// transaction as it found it.
func (l *Lifecycle) applyTx(ctx context.Context, tx *Tx, a *appendReq, before int64, op lifecycleOp) (AppendResult, error) {
	tenant, stream := a.tenant, a.stream
	var r AppendResult
	// The driver reads the stream, runs this and marks the stream
	// atomically: the checks, the append and the mark see one state.
	err := op(tx, func(st driver.StreamLifecycleState, found bool) (int64, error) {
		version, deleted, first := st.Version, st.Deleted, st.First
		switch {
		case !found || deleted == deletedSoft:
			return 0, fmt.Errorf("stream %q (tenant %s): %w", stream, tenant, ErrNotFound)
		case deleted == deletedHard:
			return 0, fmt.Errorf("stream %q (tenant %s): it was hard-deleted: %w", stream, tenant, ErrStreamDeleted)
		}
		if before > version {
			return 0, &envelope.InvalidError{Index: -1, Field: "before", Reason: fmt.Sprintf("%d is beyond the stream's version %d: truncate before a version it has", before, version)}
		}
		if before > 0 && before < first {
			return 0, &envelope.InvalidError{Index: -1, Field: "before", Reason: fmt.Sprintf("%d is before version %d, where reads of the stream start already: truncate before a version from %d to %d", before, first, first, version)}
		}
		var err error
		if r, err = tx.appendPrepared(ctx, a); err != nil {
			return 0, err
		}
		return r.Version, nil
	})
	if err != nil {
		return AppendResult{}, mapErr(err)
	}
	return r, nil
}

// truncateTx truncates a stream inside tx as Truncate does; it is how
// retention truncates many streams in one transaction. A failed
// expectation writes nothing and returns a *ConflictError; a failure of
// the mark after the append (which cannot be undone here) fails the
// transaction.
func (l *Lifecycle) truncateTx(ctx context.Context, tx *Tx, tenant, stream string, before int64, expected Expected) (AppendResult, error) {
	ev, err := envelope.New(TypeStreamTruncated, StreamTruncated{Before: before})
	if err != nil {
		return AppendResult{}, err
	}
	a, err := l.prepare(tenant, stream, expected, ev)
	if err != nil {
		return AppendResult{}, err
	}
	return l.applyTx(ctx, tx, a, before, setFirstVersion(ctx, tenant, stream, before))
}

// setFirstVersion moves where a stream's reads start, after a truncate.
func setFirstVersion(ctx context.Context, tenant, stream string, before int64) lifecycleOp {
	return func(tx *Tx, apply driver.LifecycleApply) error {
		return tx.s.ex.TruncateStream(ctx, tx, tenant, stream, before, apply)
	}
}

// StreamEvents calls fn for each event of a tenant's stream with a version
// from from to to (inclusive), in version order, as the transaction sees
// the log: a truncate or a delete does not hide them. A read model that
// handles eventlite.stream.truncated recounts what the stream retains
// with it. fn's error stops the reading and is returned.
func (tx txBook) StreamEvents(ctx context.Context, tenant, stream string, from, to int64, fn func(envelope.Event) error) error {
	if err := tx.check(); err != nil {
		return err
	}
	// fn's own error comes back as it is (fnErr tells it from the
	// engine's, which is mapped).
	var fnErr error
	err := tx.s.ex.StreamEvents(ctx, tx.s.wconn, tenant, stream, from, to, func(e envelope.Event) error {
		if subject := erasureKeyOf(&e); subject != "" {
			if err := tx.s.keys.openEvent(ctx, tx.s.wconn, false, &e, subject); err != nil {
				fnErr = err
				return err
			}
		}
		if err := fn(e); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	if err != nil && fnErr == nil {
		return mapErr(err)
	}
	return err
}
