package driver

import "context"

// Consumers is the ledger of the consumers of events from outside the
// store: the inbox that drops duplicates, the last version applied per
// aggregate, the durable buffer of events that arrived ahead of a version
// gap, version conflicts and counters. The writes run in the consumer's
// write transaction, beside its read-model writes. Times are unix
// nanoseconds.
type Consumers interface {
	// InboxInsert records a message as processed and reports whether it
	// was new. The insert is the decision (SQLite and PostgreSQL: INSERT
	// ... ON CONFLICT DO NOTHING), never a read then an insert, so that
	// two deliveries of one message cannot both be new.
	InboxInsert(ctx context.Context, q Querier, m InboxMessage, now int64) (fresh bool, err error)
	// ConsumerVersion reads the last version of an aggregate the consumer
	// applied, with that event's id; ok is false when it never applied
	// one. It runs in the consumer's write transaction, which decides from
	// it and then calls SetConsumerVersion: the version read must hold
	// until that transaction commits. SQLite holds its write lock;
	// PostgreSQL locks the row (SELECT ... FOR UPDATE) and, for an
	// aggregate without a row yet, the key (pg_advisory_xact_lock on its
	// hash), so that two deliveries of one version are never both applied.
	ConsumerVersion(ctx context.Context, q Querier, k AggregateKey) (version int64, eventID string, ok bool, err error)
	// SetConsumerVersion records the version of an aggregate the consumer
	// applied (inserting or replacing the row).
	SetConsumerVersion(ctx context.Context, q Querier, k AggregateKey, version int64, eventID string, now int64) error
	// Defer stores an event that arrived ahead of a version gap. When
	// another event already waits at that version nothing is stored and
	// the waiting one is returned with clash true. The insert and the
	// read of the one in its way are one operation (INSERT ... ON CONFLICT
	// DO NOTHING, then a read of the row that won, which the conflict
	// locked on PostgreSQL).
	Defer(ctx context.Context, q Querier, d DeferredRow) (existing DeferredRow, clash bool, err error)
	// TakeDeferred removes the event deferred at version and returns it;
	// ok is false when none waits there. Reading and removing are one
	// statement (DELETE ... RETURNING), so two passes never both take it.
	TakeDeferred(ctx context.Context, q Querier, k AggregateKey, version int64) (d DeferredRow, ok bool, err error)
	// DropStaleDeferred removes the events deferred for an aggregate at
	// or below version and returns them, none for none.
	DropStaleDeferred(ctx context.Context, q Querier, k AggregateKey, version int64) ([]DeferredRow, error)
	// ListDeferred lists the events deferred by consumer ("" for every
	// consumer) first seen before seenBefore, oldest first.
	ListDeferred(ctx context.Context, q ReadQuerier, consumer string, seenBefore int64) ([]DeferredRow, error)
	// RecordConflict records two events claiming one version.
	RecordConflict(ctx context.Context, q Querier, c ConflictRow, now int64) error
	// ListConflicts lists the unresolved version conflicts of consumer
	// ("" for every consumer) in the order they were recorded.
	ListConflicts(ctx context.Context, q ReadQuerier, consumer string) ([]ConflictRow, error)
	// CountConsumer adds to a consumer's counters, creating them at zero.
	// The addition is done by the engine (UPDATE ... SET n = n + ?), not
	// read then written.
	CountConsumer(ctx context.Context, q Querier, consumer string, applied, duplicates, stale int) error
	// ConsumerStats reads, in one snapshot, a consumer's counters (zero
	// when it has none) and the size of its queues.
	ConsumerStats(ctx context.Context, q ReadQuerier, consumer string) (ConsumerStatsRow, error)
}

// InboxMessage names a message in a consumer's inbox.
type InboxMessage struct {
	Tenant, Consumer, Source, MessageID string
}

// AggregateKey names an aggregate as one consumer sees it.
type AggregateKey struct {
	Tenant, Consumer, Subject string
}

// DeferredRow is an event deferred ahead of a version gap.
type DeferredRow struct {
	AggregateKey
	Version   int64
	EventID   string
	Event     []byte
	Expected  int64
	FirstSeen int64 // unix nanoseconds
	Reason    string
}

// ConflictRow is a version conflict.
type ConflictRow struct {
	ID int64 // assigned by the engine
	AggregateKey
	Version          int64
	KeptEventID      string
	ConflictingID    string
	ConflictingEvent []byte
	CreatedAt        int64 // unix nanoseconds; RecordConflict stamps it
}

// ConsumerStatsRow are a consumer's counters and queue sizes.
type ConsumerStatsRow struct {
	Applied, Duplicates, Stale int64
	Deferred                   int64
	OldestDeferred             int64 // unix nanoseconds, 0 when nothing waits
	Conflicts                  int64 // unresolved
	Quarantined                int64 // open
}
