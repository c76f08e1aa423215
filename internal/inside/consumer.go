package inside

import "time"

// The rows of the external-consumer ledger as the store's bookkeeping
// takes and returns them (store.Bookkeeping: InboxInsert,
// SetConsumerVersion, Defer, TakeDeferred, DropStaleDeferred,
// RecordConflict). Package projection keeps the consumers and shows an
// application its own types with the same fields (projection.DeferredEvent,
// projection.VersionConflict, projection.ConsumerStats).

// InboxMessage names a message in a consumer's inbox.
type InboxMessage struct {
	Tenant    string
	Consumer  string
	Source    string // the message's source (a CloudEvent's source)
	MessageID string // its id, unique per source
}

// ConsumerVersion names the version of an aggregate a consumer applied.
type ConsumerVersion struct {
	Tenant   string
	Consumer string
	Subject  string // the aggregate (the event's stream)
	Version  int64
	EventID  string // the applied event's id
}

// Deferred is an event that arrived ahead of a version gap.
type Deferred struct {
	Tenant    string
	Consumer  string
	Subject   string
	Version   int64
	EventID   string
	Event     []byte // structured JSON
	Expected  int64  // the version the consumer waited for when it arrived
	FirstSeen time.Time
	Reason    string
}

// Conflict is two different events claiming one version of an aggregate.
type Conflict struct {
	ID               int64
	Tenant           string
	Consumer         string
	Subject          string
	Version          int64
	KeptEventID      string // the event the consumer applied (or deferred) first
	ConflictingID    string
	ConflictingEvent []byte // structured JSON: the evidence
	CreatedAt        time.Time
}

// ConsumerStats are an external consumer's counters and queues.
type ConsumerStats struct {
	Consumer       string
	Applied        int64
	Duplicates     int64
	Stale          int64
	Deferred       int64
	OldestDeferred time.Time // zero when nothing waits
	Conflicts      int64
	Quarantined    int64
}
