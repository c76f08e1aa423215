package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// What package store/outbox (the relay's reads, the outbox's figures, the
// dead letters and the streams they park) needs of a Store. The rows are
// the driver's; package outbox converts them to its types, which have the
// same fields, and validates its callers' input.

// ReadOutbox returns up to limit pending events above after with their
// rows, their sealed data opened (outbox.Outbox.Read).
func (in inner) ReadOutbox(ctx context.Context, now time.Time, after int64, limit int) ([]driver.OutboxRow, error) {
	s := in.s
	rows, err := s.ex.ReadOutbox(ctx, s.rdb, now.UnixNano(), after, limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", mapErr(err))
	}
	for i := range rows {
		if subject := erasureKeyOf(&rows[i].Event); subject != "" {
			if err := s.keys.openEvent(ctx, s.rdb, true, &rows[i].Event, subject); err != nil {
				return nil, fmt.Errorf("read outbox: %w", err)
			}
		}
	}
	return rows, nil
}

// OutboxNextAttempt returns the earliest time a failed row is due again,
// false when none waits.
func (in inner) OutboxNextAttempt(ctx context.Context) (time.Time, bool, error) {
	next, ok, err := in.s.ex.OutboxNextAttempt(ctx, in.s.rdb)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read outbox: %w", mapErr(err))
	}
	if !ok {
		return time.Time{}, false, nil
	}
	return time.Unix(0, next), true, nil
}

// DeadLetters lists a tenant's dead letters (every tenant's for "").
func (in inner) DeadLetters(ctx context.Context, tenant string) ([]driver.DeadLetter, error) {
	return in.s.deadLetters(ctx, tenant)
}

func (s *Store) deadLetters(ctx context.Context, tenant string) ([]driver.DeadLetter, error) {
	ds, err := s.ex.DeadLetters(ctx, s.rdb, tenant)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", mapErr(err))
	}
	return ds, nil
}

// errNoDeadLetter rolls back an operator action that found no dead
// letter; the action reports it as not found.
var errNoDeadLetter = errors.New("no such dead letter")

// RequeueDeadLetters re-queues a tenant's dead letters (every tenant's
// for ""), or the one of eventID when it is not "", in one transaction,
// and logs each. It returns them; none when eventID names no dead letter.
func (in inner) RequeueDeadLetters(ctx context.Context, tenant, eventID string) ([]driver.DeadLetter, error) {
	s := in.s
	var ds []driver.DeadLetter
	err := s.Update(ctx, func(tx *Tx) error {
		rows, err := s.ex.RequeueDeadLetters(ctx, s.wconn, tenant, eventID)
		if err != nil {
			return mapErr(err)
		}
		if eventID != "" && len(rows) == 0 {
			return errNoDeadLetter
		}
		ds = rows
		return nil
	})
	if errors.Is(err, errNoDeadLetter) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		s.log.Warn("dead letter re-queued by an operator", "tenant", d.Tenant, "event_id", d.EventID, "stream", d.Stream, "version", d.Version, "position", d.Position, "attempts", d.Attempts, "error", d.Error)
	}
	return ds, nil
}

// DiscardDeadLetter gives a dead letter up for good, logged; false when
// the tenant has no dead letter with eventID.
func (in inner) DiscardDeadLetter(ctx context.Context, tenant, eventID string) (driver.DeadLetter, bool, error) {
	s := in.s
	var d driver.DeadLetter
	err := s.Update(ctx, func(tx *Tx) error {
		dd, ok, err := s.ex.DiscardDeadLetter(ctx, s.wconn, tx.now, tenant, eventID)
		if err != nil {
			return mapErr(err)
		}
		if !ok {
			return errNoDeadLetter
		}
		d = dd
		return nil
	})
	if errors.Is(err, errNoDeadLetter) {
		return driver.DeadLetter{}, false, nil
	}
	if err != nil {
		return driver.DeadLetter{}, false, err
	}
	s.log.Warn("dead letter discarded by an operator: it will never be published", "tenant", d.Tenant, "event_id", d.EventID, "stream", d.Stream, "version", d.Version, "position", d.Position, "attempts", d.Attempts, "error", d.Error)
	return d, true, nil
}

// ParkedStreams lists the streams parked by a dead letter (every
// tenant's for "").
func (in inner) ParkedStreams(ctx context.Context, tenant string) ([]driver.ParkedStream, error) {
	return in.s.parkedStreams(ctx, tenant)
}

func (s *Store) parkedStreams(ctx context.Context, tenant string) ([]driver.ParkedStream, error) {
	ps, err := s.ex.ParkedStreams(ctx, s.rdb, tenant)
	if err != nil {
		return nil, fmt.Errorf("list parked streams: %w", mapErr(err))
	}
	return ps, nil
}

// OutboxStats reads the outbox's figures in one read transaction, so
// they agree with each other, and the store clock's time they are
// measured against (the lag).
func (in inner) OutboxStats(ctx context.Context) (driver.OutboxStats, time.Time, error) {
	s := in.s
	wrap := func(err error) error { return fmt.Errorf("outbox stats: %w", mapErr(err)) }
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return driver.OutboxStats{}, time.Time{}, wrap(err)
	}
	defer func() { _ = tx.Rollback() }()
	f, err := s.ex.OutboxStats(ctx, tx)
	if err != nil {
		return driver.OutboxStats{}, time.Time{}, wrap(err)
	}
	return f, s.opts.Now(), nil
}

// OutboxEntries returns the ledger state of up to limit events above
// after (a page when limit <= 0).
func (in inner) OutboxEntries(ctx context.Context, after int64, limit int) ([]driver.OutboxEntry, error) {
	if limit <= 0 {
		limit = pageSize
	}
	xs, err := in.s.ex.OutboxEntries(ctx, in.s.rdb, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox entries: %w", mapErr(err))
	}
	return xs, nil
}
