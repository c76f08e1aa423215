package sqlitedriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// QueueCounts counts in one statement. The open quarantine entries are
// the partial index quarantine_open; an effect awaiting approval's
// updated_at is its request's time, read from the index effects_open.
func (Exec) QueueCounts(ctx context.Context, q driver.ReadQuerier) (driver.QueueCounts, error) {
	var c driver.QueueCounts
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM quarantine WHERE resolved_at IS NULL),
		(SELECT count(*) FROM deferred),
		(SELECT count(*) FROM version_conflicts WHERE resolved_at IS NULL),
		(SELECT COALESCE(MIN(updated_at), 0) FROM effects WHERE state = 'AWAITING_APPROVAL')`).Scan(&c.Quarantined, &c.Deferred, &c.Conflicts, &c.OldestAwaitingApproval)
	return c, err
}

// EffectCounts groups the effects by kind and state.
func (Exec) EffectCounts(ctx context.Context, q driver.ReadQuerier) ([]driver.EffectCount, error) {
	rows, err := q.QueryContext(ctx, `SELECT kind, state, count(*) FROM effects GROUP BY kind, state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.EffectCount
	for rows.Next() {
		var c driver.EffectCount
		if err := rows.Scan(&c.Kind, &c.State, &c.N); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
