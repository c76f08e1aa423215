package store

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Deleting and truncating a stream (package store/lifecycle is its
// public face, through inner): each appends a lifecycle event as the
// stream's next version, in one transaction with what it changes
// (migration 0011), and returns that append's result. The stream's events
// and the lifecycle events stay in the log: ReadAll, projections and the
// relay see them.

// The lifecycle events' types (lifecycle.TypeStreamDeleted and
// lifecycle.TypeStreamTruncated).
const (
	typeStreamDeleted   = envelope.ReservedTypePrefix + "stream.deleted"
	typeStreamTruncated = envelope.ReservedTypePrefix + "stream.truncated"
)

// streamDeleted is the data of an eventlite.stream.deleted event
// (lifecycle.StreamDeleted).
type streamDeleted struct {
	Reason string `json:"reason"`
	By     string `json:"by"`
	Hard   bool   `json:"hard"`
}

// streamTruncated is the data of an eventlite.stream.truncated event
// (lifecycle.StreamTruncated).
type streamTruncated struct {
	Before int64 `json:"before"`
}

// The streams.deleted column (migration 0011).
const (
	deletedSoft = 1
	deletedHard = 2
)

// deleteStream deletes a tenant's stream, in tx, or in a transaction of
// its own when tx is nil: it appends an eventlite.stream.deleted
// tombstone as its next version and drops its snapshots (see
// lifecycle.Lifecycle.Delete). A refused delete writes nothing and leaves
// tx usable.
func (s *Store) deleteStream(ctx context.Context, tx *Tx, tenant, stream string, hard bool, reason, by string, expected Expected) (AppendResult, error) {
	if tx != nil {
		if err := tx.check(); err != nil {
			return AppendResult{}, err
		}
	}
	mark := int64(deletedSoft)
	if hard {
		mark = deletedHard
	}
	ev, err := envelope.New(typeStreamDeleted, streamDeleted{Reason: reason, By: by, Hard: hard})
	if err != nil {
		return AppendResult{}, err
	}
	return s.lifecycleApply(ctx, tx, tenant, stream, expected, ev, 0, markDeleted(ctx, tenant, stream, mark))
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

// truncateStream truncates a tenant's stream before version before, in
// tx, or in a transaction of its own when tx is nil: it appends
// eventlite.stream.truncated {"before":before} as its next version, and
// reads then start at before (see lifecycle.Lifecycle.Truncate). A
// refused truncate writes nothing and leaves tx usable.
func (s *Store) truncateStream(ctx context.Context, tx *Tx, tenant, stream string, before int64, expected Expected) (AppendResult, error) {
	if tx != nil {
		if err := tx.check(); err != nil {
			return AppendResult{}, err
		}
	} else if err := s.rdb.check(); err != nil {
		return AppendResult{}, err
	}
	if before < 2 {
		return AppendResult{}, &envelope.InvalidError{Index: -1, Field: "before", Reason: fmt.Sprintf("%d is below 2: a truncate keeps versions from before on, and version 1 is the first already", before)}
	}
	ev, err := envelope.New(typeStreamTruncated, streamTruncated{Before: before})
	if err != nil {
		return AppendResult{}, err
	}
	return s.lifecycleApply(ctx, tx, tenant, stream, expected, ev, before, setFirstVersion(ctx, tenant, stream, before))
}

// lifecycleApply checks that the stream exists (and, with before > 0,
// that before is at most its version), then appends ev and marks the
// stream (op) in the same transaction: tx, or one of its own when tx is
// nil.
func (s *Store) lifecycleApply(ctx context.Context, tx *Tx, tenant, stream string, expected Expected, ev envelope.Event, before int64, op lifecycleOp) (AppendResult, error) {
	a, err := s.lifecyclePrepare(tenant, stream, expected, ev)
	if err != nil {
		return AppendResult{}, err
	}
	if tx != nil {
		return s.lifecycleApplyTx(ctx, tx, a, before, op)
	}
	var res AppendResult
	err = s.Update(ctx, func(tx *Tx) error {
		r, err := s.lifecycleApplyTx(ctx, tx, a, before, op)
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
func (s *Store) lifecyclePrepare(tenant, stream string, expected Expected, ev envelope.Event) (*appendReq, error) {
	op := "truncate"
	if ev.Type == typeStreamDeleted {
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
	return s.prepareAppendAs(true, tenant, stream, expected, []envelope.Event{ev})
}

// lifecycleApplyTx is lifecycleApply's part inside the transaction. An error leaves the
// transaction as it found it.
func (s *Store) lifecycleApplyTx(ctx context.Context, tx *Tx, a *appendReq, before int64, op lifecycleOp) (AppendResult, error) {
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
