package store

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// The outbox is the relay's ledger (migrations 0001, 0004 and 0015): an
// append writes nothing to it. Its public face, the relay's reads and the
// operator's dead-letter actions, is package store/outbox; what that
// package needs of a Store is in inner_outbox.go. A row exists only for an event the relay
// settled (published, or discarded by an operator) or that failed
// (attempts, next attempt, dead letter). The watermark W
// (outbox_watermark.settled) says every event at or below it is settled;
// an event is pending when it lies above W and has no row, or a row
// neither published nor discarded. The relay reads pending events in
// position order, publishes them, and settles each batch in one fenced
// transaction (Bookkeeping: MarkPublished, RecordFailure, DeadLetter), which
// moves W on over the settled positions. A dead letter parks its stream
// until an operator retries or discards it.
//
// The cursor C (outbox_watermark.scanned) keeps the relay's reads short
// while a stream is parked (W cannot pass its dead letter): every pending
// event in (W, max(W, C)] belongs to a stream with a failed row at or
// below it. A relay reads above C, and reaches such a stream's events
// again from the failed row's position once the row is due; an operator's
// retry or discard, or the publication of a row that had failed, lowers C
// below that row, so the stream's waiting events are read again.

// MarkPublished marks rows published under the relay's lease, in an
// Update closure: it fails with ErrStaleFence, writing nothing, unless
// lease is current. A row already published or discarded is left as it
// is. It returns how many rows it marked.
func (tx txBook) MarkPublished(ctx context.Context, lease Lease, rows []outboxmark.Published) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	if err := tx.check(); err != nil {
		return 0, err
	}
	ps := make([]driver.Published, len(rows))
	for i, r := range rows {
		ps[i] = driver.Published(r)
	}
	n, held, err := tx.s.ex.MarkPublished(ctx, tx.s.wconn, fenceOf(lease), tx.now, ps)
	if err != nil {
		return 0, fmt.Errorf("mark outbox rows published: %w", mapErr(err))
	}
	if !held {
		return 0, staleFence(lease)
	}
	return int(n), nil
}

// fenceOf is the fence a relay write must hold.
func fenceOf(l Lease) driver.Fence {
	return driver.Fence{Resource: l.Resource, Owner: l.Owner, Token: l.Token}
}

// staleFence is CheckFence's error for a lease that is not current.
func staleFence(l Lease) error {
	return fmt.Errorf("%w: %q token %d (owner %s)", ErrStaleFence, l.Resource, l.Token, l.Owner)
}

// driverFailures converts failures for the driver.
func driverFailures(failures []outboxmark.Failure) []driver.Failure {
	fs := make([]driver.Failure, len(failures))
	for i, f := range failures {
		fs[i] = driver.Failure{Position: f.Position, Error: f.Error, NextAttemptAt: f.NextAttemptAt.UnixNano()}
	}
	return fs
}

// RecordFailure records a failed attempt on each row, under the relay's
// lease (ErrStaleFence otherwise, writing nothing): attempts grow by one,
// the error and times are kept, and the row and every later row of its
// stream wait until NextAttemptAt. Rows no longer pending are skipped.
func (tx txBook) RecordFailure(ctx context.Context, lease Lease, failures []outboxmark.Failure) error {
	if len(failures) == 0 {
		return nil
	}
	if err := tx.check(); err != nil {
		return err
	}
	held, err := tx.s.ex.RecordFailures(ctx, tx.s.wconn, fenceOf(lease), tx.now, driverFailures(failures))
	if err != nil {
		return fmt.Errorf("record outbox failures: %w", mapErr(err))
	}
	if !held {
		return staleFence(lease)
	}
	return nil
}

// DeadLetter turns rows into dead letters, under the relay's lease
// (ErrStaleFence otherwise, writing nothing): the error, attempts (grown
// by one) and times are kept, and the row's stream is parked until an
// operator retries or discards it. Rows no longer pending are skipped.
func (tx txBook) DeadLetter(ctx context.Context, lease Lease, failures []outboxmark.Failure) error {
	if len(failures) == 0 {
		return nil
	}
	if err := tx.check(); err != nil {
		return err
	}
	held, err := tx.s.ex.MarkDead(ctx, tx.s.wconn, fenceOf(lease), tx.now, driverFailures(failures))
	if err != nil {
		return fmt.Errorf("dead-letter outbox rows: %w", mapErr(err))
	}
	if !held {
		return staleFence(lease)
	}
	return nil
}
