package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// nowMillis is SQLite's clock in unix milliseconds: one clock source for
// every process on the host, read inside the transaction.
const nowMillis = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`

// AcquireLease reads the row and writes it on the writer's connection:
// the store's write lock makes the pair atomic.
func (Exec) AcquireLease(ctx context.Context, q driver.Querier, resource, owner string, ttlMs int64) (driver.LeaseGrant, error) {
	var (
		curOwner        string
		token, exp, now int64
	)
	err := q.QueryRowContext(ctx, `SELECT owner, token, expires_at, `+nowMillis+` FROM leases WHERE resource = ?`, resource).
		Scan(&curOwner, &token, &exp, &now)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if err := q.QueryRowContext(ctx, `SELECT `+nowMillis).Scan(&now); err != nil {
			return driver.LeaseGrant{}, err
		}
		token = 1
		_, err = q.ExecContext(ctx, `INSERT INTO leases (resource, owner, token, expires_at, acquired_at, ttl_ms) VALUES (?, ?, ?, ?, ?, ?)`,
			resource, owner, token, now+ttlMs, now, ttlMs)
	case err != nil:
		return driver.LeaseGrant{}, err
	case curOwner == owner && exp > now:
		_, err = q.ExecContext(ctx, `UPDATE leases SET expires_at = ?, ttl_ms = ? WHERE resource = ?`, now+ttlMs, ttlMs, resource)
	case curOwner != "" && exp > now:
		return driver.LeaseGrant{Held: true, Owner: curOwner, Token: token, ExpiresAt: exp, Now: now}, nil
	default:
		token++
		_, err = q.ExecContext(ctx, `UPDATE leases SET owner = ?, token = ?, expires_at = ?, acquired_at = ?, ttl_ms = ? WHERE resource = ?`,
			owner, token, now+ttlMs, now, ttlMs, resource)
	}
	if err != nil {
		return driver.LeaseGrant{}, err
	}
	return driver.LeaseGrant{Owner: owner, Token: token, ExpiresAt: now + ttlMs, Now: now}, nil
}

// RenewLease reads the clock, then updates the row if it still matches.
func (Exec) RenewLease(ctx context.Context, q driver.Querier, f driver.Fence, ttlMs int64) (int64, bool, error) {
	var now int64
	if err := q.QueryRowContext(ctx, `SELECT `+nowMillis).Scan(&now); err != nil {
		return 0, false, err
	}
	res, err := q.ExecContext(ctx, `UPDATE leases SET expires_at = ?, ttl_ms = ? WHERE resource = ? AND owner = ? AND token = ?`,
		now+ttlMs, ttlMs, f.Resource, f.Owner, f.Token)
	if err != nil {
		return 0, false, err
	}
	n, _ := res.RowsAffected()
	return now + ttlMs, n > 0, nil
}

// CheckFence counts the matching live row; the write lock keeps the
// answer true until the transaction commits.
func (Exec) CheckFence(ctx context.Context, q driver.Querier, f driver.Fence) (bool, error) {
	var ok int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM leases WHERE resource = ? AND owner = ? AND token = ? AND expires_at > `+nowMillis,
		f.Resource, f.Owner, f.Token).Scan(&ok)
	return ok > 0, err
}
