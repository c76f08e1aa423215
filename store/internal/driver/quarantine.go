package driver

import "context"

// Quarantine holds the events set aside for a person, with the evidence,
// and the operators' retry and skip marks on them. Times are unix
// nanoseconds. Every mark is a conditional update on the entry's open
// state, so that a runner and an operator acting at once never both
// resolve an entry.
type Quarantine interface {
	// Quarantine records an entry. An open entry for the same consumer,
	// tenant, event id and position is updated instead (reason, error,
	// evidence, failure time; attempts added; retry mark cleared): the
	// match and the write are one statement (INSERT ... ON CONFLICT on
	// the partial unique index of open entries).
	Quarantine(ctx context.Context, q Querier, e QuarantineRow, now int64) error
	// ResolveQuarantine resolves as applied the open entries of consumer
	// at position, or with position 0 those for eventID.
	ResolveQuarantine(ctx context.Context, q Querier, consumer string, position int64, eventID string, now int64) error
	// QuarantineEntries lists entries of consumer ("" for every one), only
	// open ones when open is set, in the order they were recorded.
	QuarantineEntries(ctx context.Context, q ReadQuerier, consumer string, open bool) ([]QuarantineRow, error)
	// OpenQuarantineEntries lists the open entries of consumer for
	// eventID in the order they were recorded. In a write transaction
	// that then marks them, the rows must hold until it commits
	// (PostgreSQL: SELECT ... FOR UPDATE).
	OpenQuarantineEntries(ctx context.Context, q ReadQuerier, consumer, eventID string) ([]QuarantineRow, error)
	// QuarantineRetries lists the open entries of consumer marked for a
	// retry, by position then order recorded.
	QuarantineRetries(ctx context.Context, q ReadQuerier, consumer string) ([]QuarantineRow, error)
	// QuarantineNameKnown reports whether name is a projection or a
	// consumer the store has a record of (a projection, a quarantine
	// entry, counters or a checkpoint).
	QuarantineNameKnown(ctx context.Context, q ReadQuerier, name string) (bool, error)
	// MarkQuarantineRetry marks the open entries of consumer for eventID
	// for a retry.
	MarkQuarantineRetry(ctx context.Context, q Querier, consumer, eventID string, now int64) error
	// SkipQuarantine resolves the open entries of consumer for eventID as
	// skipped.
	SkipQuarantine(ctx context.Context, q Querier, consumer, eventID string, now int64) error
	// QuarantinedProjectionStatus reads the status of the projection an
	// operator skips an event of, "" when it is not recorded. In a write
	// transaction that then changes the status, the row must hold until
	// it commits (PostgreSQL: SELECT ... FOR UPDATE).
	QuarantinedProjectionStatus(ctx context.Context, q ReadQuerier, name string) (string, error)
	// ResolveRetry resolves entry id with resolution when it is open and
	// marked for retry, and reports whether it was; the check and the
	// write are one conditional update.
	ResolveRetry(ctx context.Context, q Querier, id int64, resolution string, now int64) (bool, error)
	// RetryFailed records one more failed attempt of entry id (cause,
	// failure time, retry mark cleared) when it is open and marked for
	// retry, and reports whether it was; one conditional update.
	RetryFailed(ctx context.Context, q Querier, id int64, cause string, now int64) (bool, error)
}

// QuarantineRow is a quarantine entry as stored.
type QuarantineRow struct {
	ID         int64 // assigned by the engine
	Consumer   string
	Reason     string
	Tenant     string
	Subject    string
	Version    int64
	Position   int64
	EventID    string
	Event      []byte
	Error      string
	Attempts   int
	Evidence   string
	CreatedAt  int64
	ResolvedAt int64 // 0 while open
	// LastFailedAt is CreatedAt when the entry never failed again.
	LastFailedAt     int64
	RetryRequestedAt int64 // 0 when no retry is asked for
	Resolution       string
	// Projection: Consumer names a projection the store knows.
	Projection bool
}
