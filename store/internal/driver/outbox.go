package driver

import (
	"context"
	"time"

	"github.com/eventlite/eventlite/envelope"
)

// Outbox is the relay's ledger and its dead letters. The outbox is the
// log itself: an append writes nothing to it. A ledger row exists only for
// an event the relay settled (published, or discarded by an operator) or
// that failed. The watermark W says every event at or below it is
// settled; the cursor C keeps the relay's reads short while a stream is
// parked behind a dead letter (every pending event in (W, max(W, C)]
// waits behind a failed row of its stream).
//
// Every method that writes ledger rows also moves W and C over what it
// settled, in the same call, by at most a bounded number of positions per
// call, so that W never passes an event that is not settled. The relay's
// writes (MarkPublished, RecordFailures, MarkDead) check the relay's fence
// first and write nothing when it is lost: the fence check, the ledger
// writes, the counters and the watermark move are one operation, and a
// driver whose writers do not serialize must hold the lease row (shared)
// and the watermark row (exclusive) from the check to the commit, and must
// not move W or C over a position whose transaction has not committed.
type Outbox interface {
	// ReadOutbox reads, in position order and at most limit, the pending
	// events with their failure facts, leaving out every event of a stream
	// that is parked by a dead letter, waits for a failed row's next
	// attempt (due after now, unix ns), or has a failed row at or below
	// after. It reads above after when after > 0 (never at or below W);
	// else above the cursor max(W, C), or just below the oldest failed row
	// due for another attempt when that is lower. One statement, one
	// snapshot. A driver whose positions can commit out of order returns
	// nothing at or above a position still being written, so that no
	// event commits later below what the relay has read.
	ReadOutbox(ctx context.Context, q ReadQuerier, now, after int64, limit int) ([]OutboxRow, error)
	// OutboxNextAttempt returns the earliest next attempt (unix ns) of a
	// failed row that is not dead, and false when none waits.
	OutboxNextAttempt(ctx context.Context, q ReadQuerier) (int64, bool, error)

	// MarkPublished, under fence, marks rows published at now (unix ns)
	// under the fence's token, adds their number to the published counter,
	// lowers C below any of them that had failed (its stream's waiting
	// events must be read again) and moves W and C. A row already
	// published or discarded, or a position without an event, is skipped
	// and not counted. held is false, and nothing written, when the fence
	// is not current.
	MarkPublished(ctx context.Context, q Querier, fence Fence, now int64, rows []Published) (marked int64, held bool, err error)
	// RecordFailures, under fence, records a failed attempt on each row
	// (attempts grow by one, the error and times are kept, the next
	// attempt is set), adds the rows it changed to the retried counter and
	// moves W and C. A row no longer pending, or dead, is skipped. held as
	// MarkPublished's.
	RecordFailures(ctx context.Context, q Querier, fence Fence, now int64, failures []Failure) (held bool, err error)
	// MarkDead, under fence, turns rows into dead letters (as
	// RecordFailures, with the dead time set and no next attempt), adds
	// them to the dead_lettered counter and moves W and C. held as
	// MarkPublished's.
	MarkDead(ctx context.Context, q Querier, fence Fence, now int64, failures []Failure) (held bool, err error)

	// DeadLetters lists the dead letters of a tenant (every tenant's for
	// "") in position order.
	DeadLetters(ctx context.Context, q ReadQuerier, tenant string) ([]DeadLetter, error)
	// RequeueDeadLetters clears the dead state and attempts of the dead
	// letter with that event id in tenant, or, for eventID "", of every
	// dead letter of tenant (every tenant's for ""), lowers C below each,
	// adds them to the requeued counter, and returns them as they were.
	// None found: an empty result, nothing written. The rows it returns
	// are the rows it changed: a driver whose writers do not serialize
	// locks them as it reads them.
	RequeueDeadLetters(ctx context.Context, q Querier, tenant, eventID string) ([]DeadLetter, error)
	// DiscardDeadLetter marks the dead letter with that event id in tenant
	// discarded at now (it is settled, never published), lowers C below
	// it, adds it to the discarded counter and moves W and C; it returns
	// the dead letter as it was, and false (nothing written) for none.
	// Read and write are one: locked as RequeueDeadLetters'.
	DiscardDeadLetter(ctx context.Context, q Querier, now int64, tenant, eventID string) (DeadLetter, bool, error)

	// ParkedStreams lists the streams parked by a dead letter (every
	// tenant's for ""), in the order of their first dead letters, with
	// their pending rows.
	ParkedStreams(ctx context.Context, q ReadQuerier, tenant string) ([]ParkedStream, error)
	// OutboxStats reads the outbox's figures. q is one read snapshot, so
	// that they agree with each other; it visits the pending events, not
	// the published ones.
	OutboxStats(ctx context.Context, q ReadQuerier) (OutboxStats, error)
	// OutboxEntries reads the outbox state of up to limit events above
	// after, in position order, published or not.
	OutboxEntries(ctx context.Context, q ReadQuerier, after int64, limit int) ([]OutboxEntry, error)
}

// OutboxRow is a pending event and its ledger row's failure facts (zero
// when it never failed).
type OutboxRow struct {
	Event         envelope.Event
	Attempts      int
	FirstFailedAt time.Time // zero: never failed
	LastError     string
}

// Published is one row the broker accepted; BrokerSequence 0 is none.
type Published struct {
	Position       int64
	BrokerSequence uint64
}

// Failure is one failed publish attempt; NextAttemptAt (unix ns) is
// ignored by MarkDead.
type Failure struct {
	Position      int64
	Error         string
	NextAttemptAt int64
}

// DeadLetter is a ledger row the relay gave up on, with its event's
// identity. Times are UTC.
type DeadLetter struct {
	Tenant      string
	EventID     string
	Stream      string
	Version     int64
	Position    int64
	Type        string
	Attempts    int
	Error       string
	FirstFailed time.Time
	LastFailed  time.Time
	DeadAt      time.Time
}

// ParkedStream is a stream whose events wait behind a dead letter:
// DeadLetter is its first dead letter's position, Waiting its pending
// rows (dead letters included).
type ParkedStream struct {
	Tenant     string
	Stream     string
	DeadLetter int64
	Waiting    int64
}

// OutboxStats are the outbox's figures. Oldest is the commit time of the
// oldest pending event (zero: none pending). Counters are the totals by
// name (published, retried, requeued, dead_lettered, discarded).
type OutboxStats struct {
	Pending       int64
	Oldest        time.Time
	DeadLetters   int64
	ParkedStreams int64
	Parked        int64
	Counters      map[string]int64
}

// OutboxEntry is one event's ledger state: its row as stored, zero fields
// for an event without one. Times are UTC, zero for none.
type OutboxEntry struct {
	Position       int64
	Tenant         string
	EventID        string
	Stream         string
	Version        int64
	Attempts       int
	LastError      string
	NextAttemptAt  time.Time
	FirstFailedAt  time.Time
	LastFailedAt   time.Time
	DeadAt         time.Time
	DiscardedAt    time.Time
	PublishedAt    time.Time
	RecordedAt     time.Time
	BrokerSequence uint64
	PublishedToken int64
}
