package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The effect ledger (migrations 0007 and 0010). SQLite's writer holds the
// write lock from a step's read to its commit, so a read then a write in
// the writer's transaction is atomic.

const effectColumns = `tenant, effect_key, state, provider_ref, attempts, last_error, created_at, updated_at, COALESCE(started_at, 0),
	kind, resource, summary, args, needs_approval, approval_valid_for, requested_by, requested_at, decided_by, decided_at, reason`

const selectEffect = `SELECT ` + effectColumns + ` FROM effects WHERE tenant = ? AND effect_key = ?`

func scanEffect(sc interface{ Scan(...any) error }) (driver.EffectRow, error) {
	var e driver.EffectRow
	err := sc.Scan(&e.Tenant, &e.Key, &e.State, &e.ProviderRef, &e.Attempts, &e.LastError, &e.CreatedAt, &e.UpdatedAt, &e.StartedAt,
		&e.Kind, &e.Resource, &e.Summary, &e.Args, &e.NeedsApproval, &e.ApprovalValidFor, &e.RequestedBy, &e.RequestedAt,
		&e.DecidedBy, &e.DecidedAt, &e.Reason)
	return e, err
}

// Effect reads one row.
func (Exec) Effect(ctx context.Context, q driver.ReadQuerier, tenant, key string) (driver.EffectRow, bool, error) {
	e, err := scanEffect(q.QueryRowContext(ctx, selectEffect, tenant, key))
	if errors.Is(err, sql.ErrNoRows) {
		return driver.EffectRow{}, false, nil
	}
	if err != nil {
		return driver.EffectRow{}, false, err
	}
	return e, true, nil
}

// ListEffects reads the effects_open index when the states are open ones.
func (Exec) ListEffects(ctx context.Context, q driver.ReadQuerier, tenant string, states []string) ([]driver.EffectRow, error) {
	query := `SELECT ` + effectColumns + ` FROM effects WHERE (? = '' OR tenant = ?)`
	args := []any{tenant, tenant}
	if len(states) > 0 {
		query += ` AND state IN (?` + repeatPlaceholders(len(states)-1) + `)`
		for _, st := range states {
			args = append(args, st)
		}
	}
	rows, err := q.QueryContext(ctx, query+` ORDER BY updated_at, tenant, effect_key`, args...)
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

func repeatPlaceholders(n int) string {
	b := make([]byte, 0, 3*n)
	for range n {
		b = append(b, ", ?"...)
	}
	return string(b)
}

// ReserveEffect inserts with ON CONFLICT DO NOTHING, then reads the row.
func (x Exec) ReserveEffect(ctx context.Context, q driver.Querier, e driver.EffectRow, decide func(*driver.EffectRow) (bool, error)) (driver.EffectRow, bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO effects (tenant, effect_key, state, created_at, updated_at,
		kind, resource, summary, args, needs_approval, approval_valid_for, requested_by, requested_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		e.Tenant, e.Key, e.State, e.CreatedAt, e.UpdatedAt, e.Kind, e.Resource, e.Summary, e.Args, e.NeedsApproval,
		e.ApprovalValidFor, e.RequestedBy, e.RequestedAt)
	if err != nil {
		return driver.EffectRow{}, false, err
	}
	n, _ := res.RowsAffected()
	cur, err := scanEffect(q.QueryRowContext(ctx, selectEffect, e.Tenant, e.Key))
	if err != nil {
		return driver.EffectRow{}, false, err
	}
	if decide != nil {
		write, err := decide(&cur)
		if err != nil {
			return cur, n == 1, err
		}
		if write {
			if err := writeEffect(ctx, q, cur); err != nil {
				return cur, n == 1, err
			}
		}
	}
	return cur, n == 1, nil
}

// UpdateEffect reads, decides and writes in the writer's transaction.
func (x Exec) UpdateEffect(ctx context.Context, q driver.Querier, tenant, key string, decide func(*driver.EffectRow) (bool, error)) (driver.EffectRow, bool, error) {
	cur, ok, err := x.Effect(ctx, q, tenant, key)
	if err != nil || !ok {
		return cur, ok, err
	}
	write, err := decide(&cur)
	if err != nil {
		return cur, true, err
	}
	if write {
		if err := writeEffect(ctx, q, cur); err != nil {
			return cur, true, err
		}
	}
	return cur, true, nil
}

// writeEffect stores the mutable columns of e; started_at is NULL for
// none.
func writeEffect(ctx context.Context, q driver.Querier, e driver.EffectRow) error {
	var started any
	if e.StartedAt != 0 {
		started = e.StartedAt
	}
	_, err := q.ExecContext(ctx, `UPDATE effects SET state = ?, provider_ref = ?, attempts = ?, last_error = ?, updated_at = ?, started_at = ?,
		requested_at = ?, decided_by = ?, decided_at = ?, reason = ?
		WHERE tenant = ? AND effect_key = ?`, e.State, e.ProviderRef, e.Attempts, e.LastError, e.UpdatedAt, started,
		e.RequestedAt, e.DecidedBy, e.DecidedAt, e.Reason, e.Tenant, e.Key)
	return err
}
