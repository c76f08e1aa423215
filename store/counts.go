package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Counts are the sizes of the store's consumer and effect queues, read by
// counting queries in one read transaction, so they agree with each
// other. They are what a metrics scrape needs: no row is listed, and the
// queries read index entries or row headers only, never an event's body.
// The outbox's figures are OutboxStats; the projections', Projections.
type Counts struct {
	// Quarantined counts open quarantine entries, every consumer.
	Quarantined int64
	// Deferred counts the events consumers deferred behind a version gap.
	Deferred int64
	// Conflicts counts unresolved version conflicts, every consumer.
	Conflicts int64
	// Effects counts the effect ledger's rows by state (EffectReserved,
	// EffectExecuting...); a state without rows is absent.
	Effects map[EffectState]int64
}

// Counts counts the open quarantine entries, deferred events, unresolved
// version conflicts and effects by state.
func (s *Store) Counts(ctx context.Context) (Counts, error) {
	c := Counts{Effects: map[EffectState]int64{}}
	wrap := func(err error) error { return fmt.Errorf("counts: %w", mapErr(err)) }
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return c, wrap(err)
	}
	defer func() { _ = tx.Rollback() }()
	// The open quarantine entries are the partial index quarantine_open.
	err = tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM quarantine WHERE resolved_at IS NULL),
		(SELECT count(*) FROM deferred),
		(SELECT count(*) FROM version_conflicts WHERE resolved_at IS NULL)`).Scan(&c.Quarantined, &c.Deferred, &c.Conflicts)
	if err != nil {
		return c, wrap(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT state, count(*) FROM effects GROUP BY state`)
	if err != nil {
		return c, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			state EffectState
			n     int64
		)
		if err := rows.Scan(&state, &n); err != nil {
			return c, wrap(err)
		}
		c.Effects[state] = n
	}
	if err := rows.Err(); err != nil {
		return c, wrap(err)
	}
	return c, nil
}
