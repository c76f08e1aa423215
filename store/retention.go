package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
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
	if reservedStream(p.Prefix) {
		return &ReservedStreamError{Op: opRetention, Stream: p.Prefix}
	}
	return l.s.Update(ctx, func(tx *Tx) error {
		err := tx.s.ex.SetRetention(ctx, tx, driver.RetentionPolicy{Prefix: p.Prefix, MaxAge: int64(p.MaxAge), MaxCount: p.MaxCount, UpdatedAt: tx.now})
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

// Retention lists the policies by prefix.
func (l *Lifecycle) Retention(ctx context.Context) ([]RetentionPolicy, error) {
	rows, err := l.s.ex.RetentionPolicies(ctx, l.s.rdb)
	if err != nil {
		return nil, fmt.Errorf("list retention policies: %w", mapErr(err))
	}
	var out []RetentionPolicy
	for _, r := range rows {
		out = append(out, RetentionPolicy{Prefix: r.Prefix, MaxAge: time.Duration(r.MaxAge), MaxCount: r.MaxCount, UpdatedAt: time.Unix(0, r.UpdatedAt).UTC()})
	}
	return out, nil
}

// policyFor returns the policy with the longest prefix of stream, if any.
// The store's own streams have none.
func policyFor(policies []RetentionPolicy, stream string) (RetentionPolicy, bool) {
	best, ok := RetentionPolicy{}, false
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

// retentionTrim is a stream a policy truncates before version Before.
type retentionTrim struct {
	Tenant, Stream string
	Prefix         string // the policy's
	Version        int64  // the stream's version when the trim was computed
	Before         int64
}

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
	err = s.ex.EachLiveStream(ctx, s.rdb, func(tenant, id string, version, first int64) error {
		if p, ok := policyFor(policies, id); ok {
			streams = append(streams, stream{tenant: tenant, id: id, version: version, first: first, policy: p})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("retention: list streams: %w", mapErr(err))
	}
	var out []retentionTrim
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
			out = append(out, retentionTrim{Tenant: st.tenant, Stream: st.id, Prefix: st.policy.Prefix, Version: st.version, Before: before})
		}
	}
	return out, nil
}
