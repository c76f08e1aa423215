package driver

import (
	"context"
	"database/sql"

	"github.com/eventlite/eventlite/envelope"
)

// Reads is how the store reads events: a Reader prepared once on the read
// pool for the common reads, and the rarer reads on any Querier.
type Reads interface {
	// PrepareReader prepares the common reads on the read pool db.
	PrepareReader(ctx context.Context, db *sql.DB) (Reader, error)
	// Head reads the newest position in the log, 0 when it is empty.
	Head(ctx context.Context, q ReadQuerier) (int64, error)
	// EventByID reads the tenant's event with this id; ok is false when
	// there is none. Sealed data comes back sealed.
	EventByID(ctx context.Context, q ReadQuerier, tenant, id string) (e envelope.Event, ok bool, err error)
	// NewestEvents reads a stream's events of versions above after, in
	// version order; n is a capacity hint. On the writer's connection it
	// sees the open transaction.
	NewestEvents(ctx context.Context, q ReadQuerier, tenant, stream string, after int64, n int) ([]envelope.Event, error)
	// StreamEvents calls fn for each event of a stream with a version
	// from from to to (inclusive), in version order, as q sees the log:
	// a truncate or a delete does not hide them. fn's error stops the
	// reading and is returned as it is. Sealed data comes back sealed.
	StreamEvents(ctx context.Context, q ReadQuerier, tenant, stream string, from, to int64, fn func(envelope.Event) error) error
	// StreamsPage lists up to n of a tenant's live streams in stream id
	// (byte) order, from the id from on (inclusive or after it).
	StreamsPage(ctx context.Context, q ReadQuerier, tenant, from string, inclusive bool, n int) ([]StreamRow, error)
}

// Reader holds the common reads of events, prepared on the read pool.
// Every goroutine may use it. A read appends the page's events to page
// (passed with length 0: one buffer serves every page of an iteration)
// and returns it, also when it fails part-way. Sealed data comes back
// sealed: the store opens it.
type Reader interface {
	// ReadStream reads up to n events of a stream from version from,
	// in version order, or towards version 1 with backward. Events
	// before the stream's first retained version (a truncate or a delete
	// moved it) are not read; a stream without a lifecycle row has none.
	ReadStream(ctx context.Context, page []envelope.Event, tenant, stream string, from int64, backward bool, n int) ([]envelope.Event, error)
	// ReadAll reads up to n events of the log that f selects, from
	// position from on (down with f.Backward).
	ReadAll(ctx context.Context, page []envelope.Event, f *LogFilter, from int64, n int) ([]envelope.Event, error)
	// StreamVersion reads a stream's version and lifecycle state;
	// Found is false when it has no lifecycle row.
	StreamVersion(ctx context.Context, tenant, stream string) (StreamVersion, error)
	// Close releases the statements.
	Close() error
}

// LogFilter selects events of the log; the zero value selects them all.
type LogFilter struct {
	Tenant        string
	Types         []string
	StreamPrefix  string // stream ids that start with it, in characters
	CorrelationID string
	Backward      bool
	// Query, when not nil, selects the tenant's readable events that
	// match it (see QueryRead); the store sets no other filter with it.
	Query *Query
}

// StreamVersion is a stream's version and state.
type StreamVersion struct {
	Found   bool
	Version int64
	Deleted int64 // 0 live, 1 soft-deleted, 2 hard-deleted
}

// StreamRow is one stream of a listing. Times are unix nanoseconds.
type StreamRow struct {
	Stream       string
	Version      int64
	FirstVersion int64 // where reads start (streams.first_version)
	// GapVersions counts the versions from FirstVersion to Version that
	// a restore took back (version_gaps): no event has them.
	GapVersions                 int64
	CreatedAt, UpdatedAt        int64
	FirstPosition, LastPosition int64
}
