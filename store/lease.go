package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Leases is the store's lease table, reached with Store.Leases: one
// holder per resource at a time, fenced by a token that grows with every
// new holder (tx.CheckFence).
type Leases struct{ s *Store }

// Leases returns the store's leases.
func (s *Store) Leases() *Leases { return &Leases{s: s} }

// ErrLeaseHeld: another owner holds the lease and it has not expired.
// Retryable: wait and try again (a standby does exactly that).
var ErrLeaseHeld = errors.New("lease held by another owner")

// ErrStaleFence: a fenced write carried a lease that is no longer the
// current one (expired, released, or taken over). The writer lost its
// lease and must stop writing. Permanent for that lease.
var ErrStaleFence = errors.New("stale lease: the lease was lost")

// LeaseHeldError names the current holder.
type LeaseHeldError struct {
	Resource  string
	Owner     string
	ExpiresIn time.Duration
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("lease %q is held by %s for another %s", e.Resource, e.Owner, e.ExpiresIn.Round(time.Millisecond))
}

// Unwrap lets errors.Is(err, ErrLeaseHeld) match.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// Lease is a held lease. Token is the fencing token: it grows with every
// new owner of the resource.
type Lease struct {
	Resource  string
	Owner     string
	Token     int64
	ExpiresAt time.Time // by SQLite's clock
	TTL       time.Duration
}

// nowMillis is SQLite's clock in unix milliseconds: one clock source for
// every process on the host, read inside the transaction.
const nowMillis = `CAST(unixepoch('subsec') * 1000 AS INTEGER)`

// Acquire takes the lease on resource for owner for ttl. A lease
// that is free, released or expired is taken with a new, higher token; one
// owner's own live lease is renewed with its token unchanged; a lease held
// by another owner returns a *LeaseHeldError.
func (ls *Leases) Acquire(ctx context.Context, resource, owner string, ttl time.Duration) (Lease, error) {
	s := ls.s
	if resource == "" || owner == "" || ttl <= 0 {
		return Lease{}, errors.New("store: Leases.Acquire needs a resource, an owner and a positive ttl")
	}
	var l Lease
	err := s.Update(ctx, func(tx *Tx) error {
		var (
			curOwner        string
			token, exp, now int64
		)
		err := s.wconn.QueryRowContext(ctx, `SELECT owner, token, expires_at, `+nowMillis+` FROM leases WHERE resource = ?`, resource).
			Scan(&curOwner, &token, &exp, &now)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if err := s.wconn.QueryRowContext(ctx, `SELECT `+nowMillis).Scan(&now); err != nil {
				return err
			}
			token = 1
			_, err = s.wconn.ExecContext(ctx, `INSERT INTO leases (resource, owner, token, expires_at, acquired_at, ttl_ms) VALUES (?, ?, ?, ?, ?, ?)`,
				resource, owner, token, now+ttl.Milliseconds(), now, ttl.Milliseconds())
		case err != nil:
			return err
		case curOwner == owner && exp > now:
			_, err = s.wconn.ExecContext(ctx, `UPDATE leases SET expires_at = ?, ttl_ms = ? WHERE resource = ?`, now+ttl.Milliseconds(), ttl.Milliseconds(), resource)
		case curOwner != "" && exp > now:
			return &LeaseHeldError{Resource: resource, Owner: curOwner, ExpiresIn: time.Duration(exp-now) * time.Millisecond}
		default:
			token++
			_, err = s.wconn.ExecContext(ctx, `UPDATE leases SET owner = ?, token = ?, expires_at = ?, acquired_at = ?, ttl_ms = ? WHERE resource = ?`,
				owner, token, now+ttl.Milliseconds(), now, ttl.Milliseconds(), resource)
		}
		if err != nil {
			return mapErr(err)
		}
		l = Lease{Resource: resource, Owner: owner, Token: token, ExpiresAt: time.UnixMilli(now + ttl.Milliseconds()).UTC(), TTL: ttl}
		return nil
	})
	if err != nil {
		return Lease{}, fmt.Errorf("acquire lease %q: %w", resource, err)
	}
	s.log.Debug("lease acquired", "resource", resource, "owner", owner, "token", l.Token)
	return l, nil
}

// Renew extends a held lease by its TTL. It fails with ErrStaleFence
// when the lease was taken over or released meanwhile (an expired lease
// that nobody took is renewed: no other owner wrote under it).
func (ls *Leases) Renew(ctx context.Context, l Lease) (Lease, error) {
	s := ls.s
	err := s.Update(ctx, func(tx *Tx) error {
		var now int64
		if err := s.wconn.QueryRowContext(ctx, `SELECT `+nowMillis).Scan(&now); err != nil {
			return err
		}
		res, err := s.wconn.ExecContext(ctx, `UPDATE leases SET expires_at = ?, ttl_ms = ? WHERE resource = ? AND owner = ? AND token = ?`,
			now+l.TTL.Milliseconds(), l.TTL.Milliseconds(), l.Resource, l.Owner, l.Token)
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: %q token %d is no longer current", ErrStaleFence, l.Resource, l.Token)
		}
		l.ExpiresAt = time.UnixMilli(now + l.TTL.Milliseconds()).UTC()
		return nil
	})
	if err != nil {
		return Lease{}, fmt.Errorf("renew lease %q: %w", l.Resource, err)
	}
	return l, nil
}

// Release gives the lease up so a standby may take it at once. A
// lease that is no longer current is left alone.
func (ls *Leases) Release(ctx context.Context, l Lease) error {
	s := ls.s
	err := s.Update(ctx, func(tx *Tx) error {
		_, err := s.wconn.ExecContext(ctx, `UPDATE leases SET owner = '', expires_at = 0 WHERE resource = ? AND owner = ? AND token = ?`,
			l.Resource, l.Owner, l.Token)
		return mapErr(err)
	})
	if err != nil {
		return fmt.Errorf("release lease %q: %w", l.Resource, err)
	}
	s.log.Debug("lease released", "resource", l.Resource, "owner", l.Owner, "token", l.Token)
	return nil
}

// CheckFence fails with ErrStaleFence unless l is the current, unexpired
// lease on its resource. Call it first in every fenced Update: the check
// and the writes commit together under the write lock, so a worker that
// lost its lease cannot write.
func (tx *Tx) CheckFence(ctx context.Context, l Lease) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	var ok int
	err := s.wconn.QueryRowContext(ctx, `SELECT count(*) FROM leases WHERE resource = ? AND owner = ? AND token = ? AND expires_at > `+nowMillis,
		l.Resource, l.Owner, l.Token).Scan(&ok)
	if err != nil {
		return mapErr(err)
	}
	if ok == 0 {
		return fmt.Errorf("%w: %q token %d (owner %s)", ErrStaleFence, l.Resource, l.Token, l.Owner)
	}
	return nil
}

// LeaseInfo describes a lease row, for reporting.
type LeaseInfo struct {
	Resource   string
	Owner      string // "" when released
	Token      int64
	ExpiresAt  time.Time
	AcquiredAt time.Time
	Expired    bool // by SQLite's clock at the time of reading
}

// List lists every lease row.
func (ls *Leases) List(ctx context.Context) ([]LeaseInfo, error) {
	s := ls.s
	rows, err := s.rdb.QueryContext(ctx, `SELECT resource, owner, token, expires_at, acquired_at, expires_at <= `+nowMillis+` FROM leases ORDER BY resource`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []LeaseInfo
	for rows.Next() {
		var li LeaseInfo
		var exp, acq int64
		if err := rows.Scan(&li.Resource, &li.Owner, &li.Token, &exp, &acq, &li.Expired); err != nil {
			return nil, err
		}
		li.ExpiresAt, li.AcquiredAt = time.UnixMilli(exp).UTC(), time.UnixMilli(acq).UTC()
		out = append(out, li)
	}
	return out, mapErr(rows.Err())
}
