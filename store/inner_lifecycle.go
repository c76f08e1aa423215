package store

import (
	"context"
	"time"
)

// What package store/lifecycle (the stream lifecycle: delete, truncate,
// retention, scavenge) needs of a Store. The work is the store's (it
// appends, removes events, gives space back); lifecycle is its public
// face, with the types an application reads.

// DeleteStream deletes a tenant's stream in tx, or in a transaction of
// its own when tx is nil (lifecycle.Lifecycle.Delete and DeleteTx).
func (in inner) DeleteStream(ctx context.Context, tx *Tx, tenant, stream string, hard bool, reason, by string, expected Expected) (AppendResult, error) {
	return in.s.deleteStream(ctx, tx, tenant, stream, hard, reason, by, expected)
}

// TruncateStream truncates a tenant's stream before version before in
// tx, or in a transaction of its own when tx is nil
// (lifecycle.Lifecycle.Truncate and TruncateTx).
func (in inner) TruncateStream(ctx context.Context, tx *Tx, tenant, stream string, before int64, expected Expected) (AppendResult, error) {
	return in.s.truncateStream(ctx, tx, tenant, stream, before, expected)
}

// SetRetention sets the policy of prefix, replacing the one it had; the
// caller validated the limits. A prefix of the store's own streams is a
// *ReservedStreamError.
func (in inner) SetRetention(ctx context.Context, prefix string, maxAge time.Duration, maxCount int64) error {
	return in.s.setRetention(ctx, retentionPolicy{Prefix: prefix, MaxAge: maxAge, MaxCount: maxCount})
}

// UnsetRetention drops the policy of prefix (ErrNotFound when it has
// none).
func (in inner) UnsetRetention(ctx context.Context, prefix string) error {
	return in.s.unsetRetention(ctx, prefix)
}

// Retention lists the retention policies by prefix. Each converts to a
// lifecycle.RetentionPolicy, which has the same fields.
func (in inner) Retention(ctx context.Context) ([]retentionPolicy, error) {
	return in.s.retention(ctx)
}

// Scavenge runs a scavenge (lifecycle.Lifecycle.Scavenge); the caller
// validated the options. The result's parts convert to lifecycle's types,
// which have the same fields.
func (in inner) Scavenge(ctx context.Context, dryRun, vacuum bool, batchSize int, progress func(removed, total int64)) (scavengeResult, error) {
	return in.s.scavenge(ctx, scavengeOptions{DryRun: dryRun, Vacuum: vacuum, BatchSize: batchSize, Progress: progress})
}
