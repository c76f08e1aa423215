// Package outboxmark holds what the relay settles on the outbox's rows in
// its fenced transaction (store.Bookkeeping: MarkPublished, RecordFailure,
// DeadLetter). They are eventlite's own: an application reads the outbox
// through package store/outbox and never marks its rows.
package outboxmark

import "time"

// Published is one row the broker accepted.
type Published struct {
	Position int64
	// BrokerSequence is the broker's sequence for the message (JetStream's
	// stream sequence); 0 when the destination has none.
	BrokerSequence uint64
}

// Failure is one failed publish attempt.
type Failure struct {
	Position int64
	// Error says what went wrong; it is kept on the row.
	Error string
	// NextAttemptAt is when RecordFailure lets the row (and its stream)
	// be tried again. DeadLetter ignores it.
	NextAttemptAt time.Time
}
