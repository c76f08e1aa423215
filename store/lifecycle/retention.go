package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
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
// is an *envelope.InvalidError, and a prefix of the store's own streams a
// *store.ReservedStreamError; either stores nothing.
func (l *Lifecycle) SetRetention(ctx context.Context, p RetentionPolicy) error {
	if err := p.validate(); err != nil {
		return err
	}
	return store.Inner(inside.Key{}, l.s).SetRetention(ctx, p.Prefix, p.MaxAge, p.MaxCount)
}

// UnsetRetention drops the policy of prefix. A prefix without a policy
// is store.ErrNotFound.
func (l *Lifecycle) UnsetRetention(ctx context.Context, prefix string) error {
	return store.Inner(inside.Key{}, l.s).UnsetRetention(ctx, prefix)
}

// Retention lists the policies by prefix.
func (l *Lifecycle) Retention(ctx context.Context) ([]RetentionPolicy, error) {
	ps, err := store.Inner(inside.Key{}, l.s).Retention(ctx)
	if err != nil {
		return nil, err
	}
	var out []RetentionPolicy
	for _, p := range ps {
		out = append(out, RetentionPolicy(p))
	}
	return out, nil
}
