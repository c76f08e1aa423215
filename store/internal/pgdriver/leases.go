package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// nowMillis is the server's clock in unix milliseconds: one clock source
// for every process that shares the database. clock_timestamp() is the
// time of the call, not the transaction's start, so a lease's expiry is
// judged by the time it is read.
const nowMillis = `(extract(epoch from clock_timestamp()) * 1000)::bigint`

// AcquireLease locks the resource's row (FOR UPDATE), decides and writes.
// A resource without a row is inserted with ON CONFLICT DO NOTHING: when
// another transaction inserted it first, the insert waits for it and
// does nothing, and the row is read and locked again.
func (Exec) AcquireLease(ctx context.Context, q driver.Querier, resource, owner string, ttlMs int64) (driver.LeaseGrant, error) {
	for {
		var (
			curOwner        string
			token, exp, now int64
		)
		err := q.QueryRowContext(ctx, `SELECT owner, token, expires_at, `+nowMillis+` FROM leases WHERE resource = $1 FOR UPDATE`, resource).
			Scan(&curOwner, &token, &exp, &now)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			err = q.QueryRowContext(ctx, `INSERT INTO leases (resource, owner, token, expires_at, acquired_at, ttl_ms)
				SELECT $1, $2, 1, n + $3, n, $3 FROM (SELECT `+nowMillis+` AS n) c
				ON CONFLICT (resource) DO NOTHING
				RETURNING acquired_at`, resource, owner, ttlMs).Scan(&now)
			if errors.Is(err, sql.ErrNoRows) {
				continue // inserted meanwhile by another transaction: lock it
			}
			token = 1
		case err != nil:
			return driver.LeaseGrant{}, err
		case curOwner == owner && exp > now:
			_, err = q.ExecContext(ctx, `UPDATE leases SET expires_at = $1, ttl_ms = $2 WHERE resource = $3`, now+ttlMs, ttlMs, resource)
		case curOwner != "" && exp > now:
			return driver.LeaseGrant{Held: true, Owner: curOwner, Token: token, ExpiresAt: exp, Now: now}, nil
		default:
			token++
			_, err = q.ExecContext(ctx, `UPDATE leases SET owner = $1, token = $2, expires_at = $3, acquired_at = $4, ttl_ms = $5 WHERE resource = $6`,
				owner, token, now+ttlMs, now, ttlMs, resource)
		}
		if err != nil {
			return driver.LeaseGrant{}, err
		}
		return driver.LeaseGrant{Owner: owner, Token: token, ExpiresAt: now + ttlMs, Now: now}, nil
	}
}

// RenewLease matches the row and moves its expiry in one statement.
func (Exec) RenewLease(ctx context.Context, q driver.Querier, f driver.Fence, ttlMs int64) (int64, bool, error) {
	var exp int64
	err := q.QueryRowContext(ctx, `UPDATE leases SET expires_at = `+nowMillis+` + $1, ttl_ms = $1
		WHERE resource = $2 AND owner = $3 AND token = $4 RETURNING expires_at`,
		ttlMs, f.Resource, f.Owner, f.Token).Scan(&exp)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return exp, true, nil
}

// CheckFence reads the resource's row FOR SHARE: a new holder's
// AcquireLease (FOR UPDATE) waits until this transaction ends, so the
// answer holds until it commits.
func (Exec) CheckFence(ctx context.Context, q driver.Querier, f driver.Fence) (bool, error) {
	var ok bool
	err := q.QueryRowContext(ctx, `SELECT owner = $2 AND token = $3 AND expires_at > `+nowMillis+` FROM leases WHERE resource = $1 FOR SHARE`,
		f.Resource, f.Owner, f.Token).Scan(&ok)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return ok, err
}
