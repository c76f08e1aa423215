package store

import (
	"context"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
)

// What package projection's external-consumer ledger
// (projection.Consumers: deferred events, version conflicts, counters)
// needs of a Store: its reads. The writes run in the consumer's Update
// transaction (Bookkeeping: InboxInsert, SetConsumerVersion, Defer...).

// ConsumerDeferred lists events deferred by consumer ("" for all) first
// seen before seenBefore (zero: all), oldest first.
func (in inner) ConsumerDeferred(ctx context.Context, consumer string, seenBefore time.Time) ([]inside.Deferred, error) {
	return in.s.deferred(ctx, consumer, seenBefore)
}

// ConsumerConflicts lists the unresolved version conflicts of consumer
// ("" for all).
func (in inner) ConsumerConflicts(ctx context.Context, consumer string) ([]inside.Conflict, error) {
	return in.s.conflicts(ctx, consumer)
}

// ConsumerStats reads consumer's counters and queues.
func (in inner) ConsumerStats(ctx context.Context, consumer string) (inside.ConsumerStats, error) {
	return in.s.consumerStats(ctx, consumer)
}
