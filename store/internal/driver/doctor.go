package driver

import "context"

// Doctor is what Diagnose reads beyond the other areas' listings: the
// relay's and the projections' backlogs and the streams whose versions
// are not contiguous. The findings themselves (kinds, severities,
// wording) are the store's.
type Doctor interface {
	// RelayHasRun reports whether a relay ever took its lease or
	// published an event on this store.
	RelayHasRun(ctx context.Context, q ReadQuerier) (bool, error)
	// EachPendingOutbox calls fn, in position order, for every pending
	// event (as the relay sees them) that is not a dead letter and was
	// recorded before before (Unix nanoseconds). An error of fn stops
	// the listing and is returned.
	EachPendingOutbox(ctx context.Context, q ReadQuerier, before int64, fn func(tenant, eventID string, recordedAt int64) error) error
	// RelayBacklog reports whether a pending event that is not a dead
	// letter waits for the relay.
	RelayBacklog(ctx context.Context, q ReadQuerier) (bool, error)
	// ProjectionBacklog reports whether the log's head is above the
	// projection's checkpoint (0 without one).
	ProjectionBacklog(ctx context.Context, q ReadQuerier, name string) (bool, error)
	// FirstRecordedAfter reads when the first event above position pos
	// was recorded (Unix nanoseconds); ok is false when there is none.
	FirstRecordedAfter(ctx context.Context, q ReadQuerier, pos int64) (at int64, ok bool, err error)
	// EachVersionGap calls fn for every stream whose stored versions are
	// not contiguous, or whose oldest stored version is neither 1 nor at
	// or below where its reads start (but never past its newest event),
	// and for every stream without events. An error of fn stops the
	// listing and is returned.
	EachVersionGap(ctx context.Context, q ReadQuerier, fn func(tenant, stream string) error) error
}

// Inventory counts what the file holds, for dashboards and metrics: a
// few counting reads, never a listing of events.
type Inventory interface {
	// InventoryStats counts tenant's events and streams ("" for every
	// tenant), reads its newest position and counts its events recorded
	// after cutoff (Unix nanoseconds), in one statement. Run it in a read
	// transaction so that the figures agree.
	// With generation it also reads the head (the newest position of
	// every tenant) and stats_generation's counter (migration 21 on
	// SQLite, 6 on PostgreSQL), which the caller checked exists.
	InventoryStats(ctx context.Context, q ReadQuerier, tenant string, cutoff int64, generation bool) (InventoryStats, error)
	// InventoryDelta counts, in one statement, tenant's events ("" for
	// every tenant) at positions after after, those of them that begin a
	// stream (version 1), their newest position, and its events recorded
	// after cutoff, and reads the head and stats_generation's counter. It
	// reads the log from after on: its cost grows with what was appended
	// since, not with the log.
	InventoryDelta(ctx context.Context, q ReadQuerier, tenant string, after, cutoff int64) (InventoryDelta, error)
	// TypeCounts counts a tenant's events in the log by type.
	TypeCounts(ctx context.Context, q ReadQuerier, tenant string) (map[string]int64, error)
	// Tenants lists the tenants with at least one stream, in byte order;
	// an empty list for none.
	Tenants(ctx context.Context, q ReadQuerier) ([]string, error)
}

// InventoryStats are the counts of InventoryStats.
type InventoryStats struct {
	Events, Streams, LastPosition, RecentEvents int64
	// Head and Generation: read with generation only.
	Head, Generation int64
}

// InventoryDelta are the counts of InventoryDelta.
type InventoryDelta struct {
	Events, NewStreams, LastPosition, RecentEvents int64
	Head, Generation                               int64
}
