package projection

import (
	"context"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// ConsumerLedger is the external consumers' ledger of a store, reached
// with Consumers: what waits (deferred events), what clashed (version
// conflicts) and each consumer's counters. A Consumer writes it in the
// transaction that applies each message; these are its reads, for an
// operator or a dashboard.
type ConsumerLedger struct{ s *store.Store }

// Consumers returns the external-consumer ledger of s.
func Consumers(s *store.Store) *ConsumerLedger { return &ConsumerLedger{s: s} }

// DeferredEvent is an event that arrived ahead of a version gap: it waits
// until the versions before it are applied, or until Consumer.Sweep
// quarantines it.
type DeferredEvent struct {
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

// VersionConflict is two different events claiming one version of an
// aggregate; the read model kept the first.
type VersionConflict struct {
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

// Deferred lists the events deferred by consumer ("" for all) that were
// first seen before seenBefore (zero: all), oldest first.
func (l *ConsumerLedger) Deferred(ctx context.Context, consumer string, seenBefore time.Time) ([]DeferredEvent, error) {
	rows, err := store.Inner(inside.Key{}, l.s).ConsumerDeferred(ctx, consumer, seenBefore)
	if err != nil {
		return nil, err
	}
	var out []DeferredEvent
	for _, r := range rows {
		out = append(out, DeferredEvent(r))
	}
	return out, nil
}

// Conflicts lists the unresolved version conflicts of consumer ("" for
// all).
func (l *ConsumerLedger) Conflicts(ctx context.Context, consumer string) ([]VersionConflict, error) {
	rows, err := store.Inner(inside.Key{}, l.s).ConsumerConflicts(ctx, consumer)
	if err != nil {
		return nil, err
	}
	var out []VersionConflict
	for _, r := range rows {
		out = append(out, VersionConflict(r))
	}
	return out, nil
}

// Stats reads consumer's counters and queues.
func (l *ConsumerLedger) Stats(ctx context.Context, consumer string) (ConsumerStats, error) {
	st, err := store.Inner(inside.Key{}, l.s).ConsumerStats(ctx, consumer)
	return ConsumerStats(st), err
}
