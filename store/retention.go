package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
)

// RetentionPolicy keeps the streams whose id starts with Prefix (in every
// tenant) only so long or so many: the longest matching prefix decides a
// stream's policy. A scavenge applies it by truncating the stream (it
// appends eventlite.stream.truncated, so projections see it), then
// removes what lies before the truncation.
//
// A policy never trims a stream to nothing: the stream's newest event
// whose type does not start with "eventlite." stays (deleting a stream is
// what Lifecycle.Delete is for).
type RetentionPolicy struct {
	// Prefix is the stream-id prefix; "" matches every stream.
	Prefix string
	// MaxAge keeps the events recorded within this long before the
	// scavenge; 0 means no age limit.
	MaxAge time.Duration
	// MaxCount keeps this many of the newest events whose type does not
	// start with "eventlite." (eventlite's own events do not count); 0
	// means no count limit.
	MaxCount int64
	// UpdatedAt is when the policy was last set (read only).
	UpdatedAt time.Time
}

// validate refuses a policy with a negative limit or none at all.
func (p RetentionPolicy) validate() error {
	switch {
	case p.MaxAge < 0:
		return &envelope.InvalidError{Index: -1, Field: "max-age", Reason: fmt.Sprintf("%s is negative: give a positive duration", p.MaxAge)}
	case p.MaxCount < 0:
		return &envelope.InvalidError{Index: -1, Field: "max-count", Reason: fmt.Sprintf("%d is negative: give a positive count", p.MaxCount)}
	case p.MaxAge == 0 && p.MaxCount == 0:
		return &envelope.InvalidError{Index: -1, Field: "max-age", Reason: "a policy needs a max age or a max count (or both); to drop a policy, unset it"}
	}
	return nil
}

// SetRetention sets the policy of p.Prefix, replacing the one it had: a
// limit p leaves at zero is no limit. A negative limit, or none at all,
// is an *envelope.InvalidError and stores nothing.
func (l *Lifecycle) SetRetention(ctx context.Context, p RetentionPolicy) error {
	if err := l.s.rdb.check(); err != nil {
		return err
	}
	if err := p.validate(); err != nil {
		return err
	}
	return l.s.Update(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO retention_policies (prefix, max_age, max_count, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (prefix) DO UPDATE SET max_age = excluded.max_age, max_count = excluded.max_count, updated_at = excluded.updated_at`,
			p.Prefix, nullIfZero(int64(p.MaxAge)), nullIfZero(p.MaxCount), tx.now)
		if err != nil {
			return fmt.Errorf("set retention of prefix %q: %w", p.Prefix, err)
		}
		return nil
	})
}

// UnsetRetention drops the policy of prefix. A prefix without a policy
// is ErrNotFound.
func (l *Lifecycle) UnsetRetention(ctx context.Context, prefix string) error {
	return l.s.Update(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM retention_policies WHERE prefix = ?`, prefix)
		if err != nil {
			return fmt.Errorf("unset retention of prefix %q: %w", prefix, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("retention policy for prefix %q: %w", prefix, ErrNotFound)
		}
		return nil
	})
}

// Retention lists the policies by prefix.
func (l *Lifecycle) Retention(ctx context.Context) ([]RetentionPolicy, error) {
	var out []RetentionPolicy
	err := l.s.eachRow(ctx, func(r *sql.Rows) error {
		p, err := scanPolicy(r)
		out = append(out, p)
		return err
	}, `SELECT prefix, max_age, max_count, updated_at FROM retention_policies ORDER BY prefix`)
	if err != nil {
		return nil, fmt.Errorf("list retention policies: %w", err)
	}
	return out, nil
}

func scanPolicy(r interface{ Scan(...any) error }) (RetentionPolicy, error) {
	var p RetentionPolicy
	var age, count sql.NullInt64
	var at int64
	if err := r.Scan(&p.Prefix, &age, &count, &at); err != nil {
		return p, err
	}
	p.MaxAge, p.MaxCount = time.Duration(age.Int64), count.Int64
	p.UpdatedAt = time.Unix(0, at).UTC()
	return p, nil
}

func nullIfZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// policyFor returns the policy with the longest prefix of stream, if any.
func policyFor(policies []RetentionPolicy, stream string) (RetentionPolicy, bool) {
	best, ok := RetentionPolicy{}, false
	for _, p := range policies {
		if strings.HasPrefix(stream, p.Prefix) && (!ok || len(p.Prefix) > len(best.Prefix)) {
			best, ok = p, true
		}
	}
	return best, ok
}

// retentionTrim is a stream a policy truncates before version Before.
type retentionTrim struct {
	Tenant, Stream string
	Prefix         string // the policy's
	Version        int64  // the stream's version when the trim was computed
	Before         int64
}

// userEvent is the SQL condition for an event that is not eventlite's own.
const userEvent = `substr(type, 1, 10) != 'eventlite.'`

// retentionTrims computes, as of now, the live streams the policies
// truncate and where. It reads on the read pool.
func (s *Store) retentionTrims(ctx context.Context, now time.Time) ([]retentionTrim, error) {
	policies, err := s.Lifecycle().Retention(ctx)
	if err != nil || len(policies) == 0 {
		return nil, err
	}
	type stream struct {
		tenant, id     string
		version, first int64
		policy         RetentionPolicy
	}
	var streams []stream
	err = s.eachRow(ctx, func(r *sql.Rows) error {
		var st stream
		if err := r.Scan(&st.tenant, &st.id, &st.version, &st.first); err != nil {
			return err
		}
		if p, ok := policyFor(policies, st.id); ok {
			st.policy = p
			streams = append(streams, st)
		}
		return nil
	}, `SELECT s.tenant, s.stream_id, COALESCE((SELECT MAX(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0),
		s.first_version FROM streams s WHERE s.deleted = 0`)
	if err != nil {
		return nil, fmt.Errorf("retention: list streams: %w", err)
	}
	var out []retentionTrim
	for _, st := range streams {
		// The newest event that is not eventlite's own always stays.
		var newest sql.NullInt64
		if err := s.rdb.QueryRowContext(ctx, `SELECT MAX(version) FROM events WHERE tenant = ? AND stream_id = ? AND version >= ? AND `+userEvent,
			st.tenant, st.id, st.first).Scan(&newest); err != nil {
			return nil, fmt.Errorf("retention: stream %q: %w", st.id, mapErr(err))
		}
		if !newest.Valid {
			continue
		}
		before := st.first
		if st.policy.MaxAge > 0 {
			var v sql.NullInt64
			cutoff := now.Add(-st.policy.MaxAge).UnixNano()
			if err := s.rdb.QueryRowContext(ctx, `SELECT MAX(version) FROM events WHERE tenant = ? AND stream_id = ? AND version >= ? AND version < ? AND recorded_at < ? AND `+userEvent,
				st.tenant, st.id, st.first, newest.Int64, cutoff).Scan(&v); err != nil {
				return nil, fmt.Errorf("retention: stream %q: %w", st.id, mapErr(err))
			}
			if v.Valid {
				before = max(before, v.Int64+1)
			}
		}
		if st.policy.MaxCount > 0 {
			var v int64
			err := s.rdb.QueryRowContext(ctx, `SELECT version FROM events WHERE tenant = ? AND stream_id = ? AND version >= ? AND `+userEvent+`
				ORDER BY version DESC LIMIT 1 OFFSET ?`, st.tenant, st.id, st.first, st.policy.MaxCount-1).Scan(&v)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				// Not more than MaxCount: nothing to trim.
			case err != nil:
				return nil, fmt.Errorf("retention: stream %q: %w", st.id, mapErr(err))
			default:
				before = max(before, v)
			}
		}
		if before > st.first && before >= 2 {
			out = append(out, retentionTrim{Tenant: st.tenant, Stream: st.id, Prefix: st.policy.Prefix, Version: st.version, Before: before})
		}
	}
	return out, nil
}
