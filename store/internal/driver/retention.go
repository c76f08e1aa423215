package driver

import "context"

// Retention keeps the retention policies and computes, for a scavenge,
// where they trim a stream. Only events whose type does not start with
// "eventlite." (user events) count.
type Retention interface {
	// SetRetention sets the policy of p.Prefix, replacing the one it had
	// (an upsert: atomic on its own).
	SetRetention(ctx context.Context, q Querier, p RetentionPolicy) error
	// UnsetRetention drops the policy of prefix and reports whether
	// there was one.
	UnsetRetention(ctx context.Context, q Querier, prefix string) (bool, error)
	// RetentionPolicies lists the policies by prefix.
	RetentionPolicies(ctx context.Context, q ReadQuerier) ([]RetentionPolicy, error)
	// EachLiveStream calls fn for every stream not deleted, with its
	// version (0 without events) and the version its reads start at. An
	// error of fn stops the listing and is returned.
	EachLiveStream(ctx context.Context, q ReadQuerier, fn func(tenant, stream string, version, first int64) error) error
	// NewestUserVersion reads a stream's newest user event's version from
	// version from on; ok is false when there is none.
	NewestUserVersion(ctx context.Context, q ReadQuerier, tenant, stream string, from int64) (v int64, ok bool, err error)
	// NewestUserVersionBefore reads the newest version from from to
	// below-1 of a user event recorded before recordedBefore (Unix
	// nanoseconds); ok is false when there is none.
	NewestUserVersionBefore(ctx context.Context, q ReadQuerier, tenant, stream string, from, below, recordedBefore int64) (v int64, ok bool, err error)
	// NthNewestUserVersion reads the version of the n-th newest user
	// event (n from 1) from version from on; ok is false when there are
	// fewer than n.
	NthNewestUserVersion(ctx context.Context, q ReadQuerier, tenant, stream string, from, n int64) (v int64, ok bool, err error)
}

// RetentionPolicy is a stored retention policy; a zero limit is none.
type RetentionPolicy struct {
	Prefix    string
	MaxAge    int64 // nanoseconds
	MaxCount  int64
	UpdatedAt int64 // Unix nanoseconds
}
