package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Counts are the sizes of the store's consumer and effect queues, read by
// counting queries in one read transaction, so they agree with each
// other. They are what a metrics scrape needs: no row is listed, and the
// queries read index entries or row headers only, never an event's body.
// The outbox's figures are package store/outbox's Stats; the projections', projection.Records.
type Counts struct {
	// Quarantined counts open quarantine entries, every consumer.
	Quarantined int64
	// Deferred counts the events consumers deferred behind a version gap.
	Deferred int64
	// Conflicts counts unresolved version conflicts, every consumer.
	Conflicts int64
	// Effects counts the effect ledger's rows by state, named as package
	// effect names its states ("RESERVED", "EXECUTING"...); a state
	// without rows is absent.
	Effects map[string]int64
	// EffectsByKind counts them by kind ("external"...), then state;
	// absent when none.
	EffectsByKind map[string]map[string]int64
	// AwaitingApprovalAge is how long the oldest request for approval has
	// waited, by the store's clock; 0 when none waits.
	AwaitingApprovalAge time.Duration
}

// Counts counts the open quarantine entries, deferred events, unresolved
// version conflicts, effects by state and kind, and the oldest request
// for approval.
func (inv *Inventory) Counts(ctx context.Context) (Counts, error) {
	s := inv.s
	c := Counts{Effects: map[string]int64{}, EffectsByKind: map[string]map[string]int64{}}
	wrap := func(err error) error { return fmt.Errorf("counts: %w", mapErr(err)) }
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return c, wrap(err)
	}
	defer func() { _ = tx.Rollback() }()
	q, err := s.ex.QueueCounts(ctx, tx)
	if err != nil {
		return c, wrap(err)
	}
	c.Quarantined, c.Deferred, c.Conflicts = q.Quarantined, q.Deferred, q.Conflicts
	// An effect enters AWAITING_APPROVAL when it is requested and leaves
	// it on a decision: the oldest's time is its request's.
	if oldest := q.OldestAwaitingApproval; oldest != 0 {
		c.AwaitingApprovalAge = max(s.opts.Now().Sub(time.Unix(0, oldest)), 0)
	}
	effects, err := s.ex.EffectCounts(ctx, tx)
	if err != nil {
		return c, wrap(err)
	}
	for _, e := range effects {
		kind, state := e.Kind, e.State
		c.Effects[state] += e.N
		if c.EffectsByKind[kind] == nil {
			c.EffectsByKind[kind] = map[string]int64{}
		}
		c.EffectsByKind[kind][state] = e.N
	}
	return c, nil
}
