package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// retentionPolicy is a stored retention policy (lifecycle.RetentionPolicy
// is its public face, with the same fields): the streams whose id starts
// with Prefix are kept only so long (MaxAge) or so many (MaxCount); a
// zero limit is none.
type retentionPolicy struct {
	Prefix    string
	MaxAge    time.Duration
	MaxCount  int64
	UpdatedAt time.Time
}

// setRetention sets the policy of prefix, replacing the one it had
// (package lifecycle validated the limits). The store's own streams
// have none.
func (s *Store) setRetention(ctx context.Context, p retentionPolicy) error {
	if err := s.rdb.check(); err != nil {
		return err
	}
	if reservedStream(p.Prefix) {
		return &ReservedStreamError{Op: opRetention, Stream: p.Prefix}
	}
	return s.Update(ctx, func(tx *Tx) error {
		err := tx.s.ex.SetRetention(ctx, tx, driver.RetentionPolicy{Prefix: p.Prefix, MaxAge: int64(p.MaxAge), MaxCount: p.MaxCount, UpdatedAt: tx.now})
		if err != nil {
			return fmt.Errorf("set retention of prefix %q: %w", p.Prefix, err)
		}
		return nil
	})
}

// unsetRetention drops the policy of prefix. A prefix without a policy
// is ErrNotFound.
func (s *Store) unsetRetention(ctx context.Context, prefix string) error {
	return s.Update(ctx, func(tx *Tx) error {
		found, err := tx.s.ex.UnsetRetention(ctx, tx, prefix)
		if err != nil {
			return fmt.Errorf("unset retention of prefix %q: %w", prefix, err)
		}
		if !found {
			return fmt.Errorf("retention policy for prefix %q: %w", prefix, ErrNotFound)
		}
		return nil
	})
}

// retention lists the policies by prefix.
func (s *Store) retention(ctx context.Context) ([]retentionPolicy, error) {
	rows, err := s.ex.RetentionPolicies(ctx, s.rdb)
	if err != nil {
		return nil, fmt.Errorf("list retention policies: %w", mapErr(err))
	}
	var out []retentionPolicy
	for _, r := range rows {
		out = append(out, retentionPolicy{Prefix: r.Prefix, MaxAge: time.Duration(r.MaxAge), MaxCount: r.MaxCount, UpdatedAt: time.Unix(0, r.UpdatedAt).UTC()})
	}
	return out, nil
}

// policyFor returns the policy with the longest prefix of stream, if any.
// The store's own streams have none.
func policyFor(policies []retentionPolicy, stream string) (retentionPolicy, bool) {
	best, ok := retentionPolicy{}, false
	if reservedStream(stream) {
		return best, false
	}
	for _, p := range policies {
		if strings.HasPrefix(stream, p.Prefix) && (!ok || len(p.Prefix) > len(best.Prefix)) {
			best, ok = p, true
		}
	}
	return best, ok
}

// retentionPlan is a stream a policy truncates before version Before.
type retentionPlan struct {
	Tenant, Stream string
	Prefix         string // the policy's
	Version        int64  // the stream's version when the trim was computed
	Before         int64
}

// retentionTrims computes, as of now, the live streams the policies
// truncate and where. It reads on the read pool.
func (s *Store) retentionTrims(ctx context.Context, now time.Time) ([]retentionPlan, error) {
	policies, err := s.retention(ctx)
	if err != nil || len(policies) == 0 {
		return nil, err
	}
	type stream struct {
		tenant, id     string
		version, first int64
		policy         retentionPolicy
	}
	var streams []stream
	err = s.ex.EachLiveStream(ctx, s.rdb, func(tenant, id string, version, first int64) error {
		if p, ok := policyFor(policies, id); ok {
			streams = append(streams, stream{tenant: tenant, id: id, version: version, first: first, policy: p})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retention: list streams: %w", mapErr(err))
	}
	var out []retentionPlan
	for _, st := range streams {
		// The newest event that is not eventlite's own always stays.
		newest, ok, err := s.ex.NewestUserVersion(ctx, s.rdb, st.tenant, st.id, st.first)
		if err != nil {
			return nil, fmt.Errorf("retention: stream %q: %w", st.id, mapErr(err))
		}
		if !ok {
			continue
		}
		before := st.first
		if st.policy.MaxAge > 0 {
			cutoff := now.Add(-st.policy.MaxAge).UnixNano()
			v, ok, err := s.ex.NewestUserVersionBefore(ctx, s.rdb, st.tenant, st.id, st.first, newest, cutoff)
			if err != nil {
				return nil, fmt.Errorf("retention: stream %q: %w", st.id, mapErr(err))
			}
			if ok {
				before = max(before, v+1)
			}
		}
		if st.policy.MaxCount > 0 {
			v, ok, err := s.ex.NthNewestUserVersion(ctx, s.rdb, st.tenant, st.id, st.first, st.policy.MaxCount)
			switch {
			case err != nil:
				return nil, fmt.Errorf("retention: stream %q: %w", st.id, mapErr(err))
			case !ok:
				// Not more than MaxCount: nothing to trim.
			default:
				before = max(before, v)
			}
		}
		if before > st.first && before >= 2 {
			out = append(out, retentionPlan{Tenant: st.tenant, Stream: st.id, Prefix: st.policy.Prefix, Version: st.version, Before: before})
		}
	}
	return out, nil
}
