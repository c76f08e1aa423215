package sqlshared

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The effect ledger. A step reads its row with the dialect's ForUpdate
// and writes it back in the same transaction, so that two steps on one
// effect never both start from the same state: PostgreSQL locks the row,
// even outside the writer's serialization on log_head; SQLite's writer
// holds the write lock from a step's read to its commit.

const effectColumns = `tenant, effect_key, state, provider_ref, attempts, last_error, created_at, updated_at, COALESCE(started_at, 0),
	kind, resource, summary, args, needs_approval <> 0, approval_valid_for, requested_by, requested_at, decided_by, decided_at, reason`

const selectEffect = `SELECT ` + effectColumns + ` FROM effects WHERE tenant = ? AND effect_key = ?`

func scanEffect(sc scanner) (driver.EffectRow, error) {
	var e driver.EffectRow
	err := sc.Scan(&e.Tenant, &e.Key, &e.State, &e.ProviderRef, &e.Attempts, &e.LastError, &e.CreatedAt, &e.UpdatedAt, &e.StartedAt,
		&e.Kind, &e.Resource, &e.Summary, &e.Args, &e.NeedsApproval, &e.ApprovalValidFor, &e.RequestedBy, &e.RequestedAt,
		&e.DecidedBy, &e.DecidedAt, &e.Reason)
	return e, err
}

// lockedEffect reads one row for a step that writes it back: sql.ErrNoRows
// when there is none.
func (x Exec[D]) lockedEffect(ctx context.Context, q driver.Querier, tenant, key string) (driver.EffectRow, error) {
	return scanEffect(q.QueryRowContext(ctx, x.bind(selectEffect+x.dialect().ForUpdate()), tenant, key))
}

// Effect reads one row.
func (x Exec[D]) Effect(ctx context.Context, q driver.ReadQuerier, tenant, key string) (driver.EffectRow, bool, error) {
	e, err := scanEffect(q.QueryRowContext(ctx, x.bind(selectEffect), tenant, key))
	if errors.Is(err, sql.ErrNoRows) {
		return driver.EffectRow{}, false, nil
	}
	if err != nil {
		return driver.EffectRow{}, false, err
	}
	return e, true, nil
}

// ListEffects reads the effects_open index when the states are open ones.
func (x Exec[D]) ListEffects(ctx context.Context, q driver.ReadQuerier, tenant string, states []string) ([]driver.EffectRow, error) {
	query := `SELECT ` + effectColumns + ` FROM effects WHERE (? = '' OR tenant = ?)`
	args := []any{tenant, tenant}
	if len(states) > 0 {
		query += ` AND state IN (?` + strings.Repeat(", ?", len(states)-1) + `)`
		for _, st := range states {
			args = append(args, st)
		}
	}
	rows, err := q.QueryContext(ctx, x.bind(query+` ORDER BY updated_at, tenant, effect_key`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.EffectRow
	for rows.Next() {
		e, err := scanEffect(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ReserveEffect inserts with ON CONFLICT DO NOTHING, then reads the row
// for update (on PostgreSQL, a concurrent insert of the same key waits
// for the first one's transaction, then reads its row).
func (x Exec[D]) ReserveEffect(ctx context.Context, q driver.Querier, e driver.EffectRow, decide func(*driver.EffectRow) (bool, error)) (driver.EffectRow, bool, error) {
	res, err := q.ExecContext(ctx, x.bind(`INSERT INTO effects (tenant, effect_key, state, created_at, updated_at,
		kind, resource, summary, args, needs_approval, approval_valid_for, requested_by, requested_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
		e.Tenant, e.Key, e.State, e.CreatedAt, e.UpdatedAt, e.Kind, e.Resource, e.Summary, e.Args, approvalFlag(e.NeedsApproval),
		e.ApprovalValidFor, e.RequestedBy, e.RequestedAt)
	if err != nil {
		return driver.EffectRow{}, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return driver.EffectRow{}, false, err
	}
	cur, err := x.lockedEffect(ctx, q, e.Tenant, e.Key)
	if err != nil {
		return driver.EffectRow{}, false, err
	}
	if decide != nil {
		write, err := decide(&cur)
		if err != nil {
			return cur, n == 1, err
		}
		if write {
			if err := x.writeEffect(ctx, q, cur); err != nil {
				return cur, n == 1, err
			}
		}
	}
	return cur, n == 1, nil
}

// UpdateEffect reads the row for update, decides and writes.
func (x Exec[D]) UpdateEffect(ctx context.Context, q driver.Querier, tenant, key string, decide func(*driver.EffectRow) (bool, error)) (driver.EffectRow, bool, error) {
	cur, err := x.lockedEffect(ctx, q, tenant, key)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.EffectRow{}, false, nil
	}
	if err != nil {
		return driver.EffectRow{}, false, err
	}
	write, err := decide(&cur)
	if err != nil {
		return cur, true, err
	}
	if write {
		if err := x.writeEffect(ctx, q, cur); err != nil {
			return cur, true, err
		}
	}
	return cur, true, nil
}

// writeEffect stores the mutable columns of e; started_at is NULL for
// none.
func (x Exec[D]) writeEffect(ctx context.Context, q driver.Querier, e driver.EffectRow) error {
	var started any
	if e.StartedAt != 0 {
		started = e.StartedAt
	}
	_, err := q.ExecContext(ctx, x.bind(`UPDATE effects SET state = ?, provider_ref = ?, attempts = ?, last_error = ?, updated_at = ?, started_at = ?,
		requested_at = ?, decided_by = ?, decided_at = ?, reason = ?
		WHERE tenant = ? AND effect_key = ?`), e.State, e.ProviderRef, e.Attempts, e.LastError, e.UpdatedAt, started,
		e.RequestedAt, e.DecidedBy, e.DecidedAt, e.Reason, e.Tenant, e.Key)
	return err
}

// approvalFlag is b as needs_approval stores it: 0 or 1.
func approvalFlag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
