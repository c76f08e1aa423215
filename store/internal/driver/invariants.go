package driver

import "context"

// Invariants reads what the store's checks of a whole log need: how many
// rows break each invariant of the log, the engine's own check of its
// storage, and the facts that a backup's copy must match. Every method
// reads everything it checks: they are for tests, reconciliation and
// backups, never for a hot path. They run on the read pool of an open
// store or on a connection to a file no store has open.
type Invariants interface {
	// CheckLog counts, for every invariant that the database's schema
	// has (a file of an older schema lacks the newer ones), the rows
	// that break it, in the order of the Invariant constants; a count
	// of 0 is an invariant that holds. tombstoneType is the event type
	// of a deleted stream's last event.
	CheckLog(ctx context.Context, q ReadQuerier, tombstoneType string) ([]Violations, error)
	// IntegrityCheck runs the engine's check of its storage: none for a
	// sound database, else one message per problem it found.
	IntegrityCheck(ctx context.Context, q ReadQuerier) ([]string, error)
	// LogFacts reads, in one snapshot, the counts, the newest position
	// and the position sequence (the last position handed out, which
	// may be below the newest position in a file of an old schema).
	LogFacts(ctx context.Context, q ReadQuerier) (LogFacts, error)
	// EachEventTags calls fn, in position order, for every event whose
	// stored extensions hold the envelope.ExtTags extension as a string:
	// value is that string, as stored. Nothing on a database without
	// the tag index (an older schema).
	EachEventTags(ctx context.Context, q ReadQuerier, fn func(tenant string, position int64, value string) error) error
}

// Invariant is one invariant of the log that CheckLog counts breaks of.
type Invariant uint8

const (
	// VersionsGapFree: a stream's versions run 1..n without gap, or, in
	// a schema with scavenges, first..n with first at most where its
	// reads start.
	VersionsGapFree Invariant = iota + 1
	// StreamsHaveEvents: every stream row has events.
	StreamsHaveEvents
	// EventsHaveStream: every event has a stream row.
	EventsHaveStream
	// EventsHaveOutboxRow: every event has an outbox row (only in a
	// schema without the outbox's watermark).
	EventsHaveOutboxRow
	// OutboxRowsHaveEvent: every outbox row has its event.
	OutboxRowsHaveEvent
	// PositionsFollowVersions: positions increase with versions in a
	// stream.
	PositionsFollowVersions
	// PositionsGapFree: no hole in the global positions but those a
	// scavenge removed or a restore left.
	PositionsGapFree
	// TombstonesLast: a deleted stream's newest event is its tombstone.
	TombstonesLast
	// FirstVersionsInRange: a stream's reads start at 1..version+1.
	FirstVersionsInRange
	// RemovedIDsGone: no removed event id is still in the log.
	RemovedIDsGone
	// RemovedPositionsGone: no removed position is still in the log.
	RemovedPositionsGone
	// WatermarkOneRow: the outbox's watermark is one row.
	WatermarkOneRow
	// SettledBelowWatermark: every event at or below the watermark is
	// settled.
	SettledBelowWatermark
	// PendingBelowCursorBlocked: a pending event between the watermark
	// and the relay's cursor is in a stream with a failed row.
	PendingBelowCursorBlocked
	// WatermarkNotAhead: neither the watermark nor the cursor is above
	// the newest position.
	WatermarkNotAhead
	// FloorOneRow: the position floor is one row.
	FloorOneRow
	// RemovedBelowSequence: no removed position is above the sequence,
	// where the next append would hand it out again.
	RemovedBelowSequence
)

// Violations is how many rows break one invariant.
type Violations struct {
	Invariant Invariant
	Count     int64
}

// LogFacts are what a log holds, as a backup's copy is checked against.
type LogFacts struct {
	Events, Streams int64
	Head            int64 // the newest position; 0 without events
	Sequence        int64 // the last position handed out; 0 for none
}
