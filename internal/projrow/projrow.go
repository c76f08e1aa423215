// Package projrow holds the rows of a store's projection bookkeeping as
// package store keeps them and package projection shows them: projection
// records, quarantine entries, rebuilds and holes. The public types are
// package projection's; these cross the boundary between the two
// (store.Bookkeeping and the store's inner face), which an application
// does not call.
package projrow

import (
	"fmt"
	"time"
)

// Record is a projection's stored status and place (projection.Record).
type Record struct {
	Name            string
	Status          string
	Detail          string
	Checkpoint      int64
	Quarantined     int
	LeaseOwner      string
	LeaseLive       bool
	UpdatedAt       time.Time
	LeaseExpiredFor time.Duration
	LeaseTTL        time.Duration
	OwnerGone       bool
	Orphaned        bool
}

// Quarantined is a quarantine entry (projection.Quarantined).
type Quarantined struct {
	ID               int64
	Consumer         string
	Reason           string
	Tenant           string
	Subject          string
	Version          int64
	Position         int64
	EventID          string
	Event            []byte
	Error            string
	Attempts         int
	Evidence         string
	CreatedAt        time.Time
	ResolvedAt       time.Time
	LastFailedAt     time.Time
	RetryRequestedAt time.Time
	Resolution       string
	Kind             string
	Type             string
}

// Rebuild is a projection's rebuild in progress (projection.Rebuild).
type Rebuild struct {
	Projection string
	Generation int64
	Checkpoint int64
	Watermark  int64
	Applied    int64
	StartedAt  time.Time
	UpdatedAt  time.Time
}

// Hole is a run of missing global positions (projection.Hole).
type Hole struct {
	From, To   int64
	DetectedBy string
	DetectedAt time.Time
}

// NotFound is the store's answer for a quarantine name it has no record
// of (EventID "") or an event id without an open entry;
// package projection turns it into its QuarantineNotFoundError.
type NotFound struct {
	Name    string
	EventID string
}

func (e *NotFound) Error() string {
	if e.EventID == "" {
		return fmt.Sprintf("no projection or consumer named %q in this store", e.Name)
	}
	return fmt.Sprintf("%s has no open quarantine entry for event %q", e.Name, e.EventID)
}
