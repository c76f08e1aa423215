package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Quarantine reasons.
const (
	ReasonHandlerError     = "handler_error"     // a handler kept failing on the event
	ReasonUninterpretable  = "uninterpretable"   // unknown type or schema version
	ReasonDeferredTooLong  = "deferred_too_long" // a version gap did not fill in time
	ReasonUndecodable      = "undecodable"       // the message is not a CloudEvent
	ReasonTooManyDelivered = "too_many_deliveries"
)

// Quarantined is an event set aside for a person, with the evidence.
type Quarantined struct {
	ID         int64
	Consumer   string // the projection or consumer name
	Reason     string
	Tenant     string
	Subject    string
	Version    int64
	Position   int64 // for local projections
	EventID    string
	Event      []byte // the event as structured JSON, when it decoded
	Error      string
	Attempts   int
	Evidence   string // JSON object
	CreatedAt  time.Time
	ResolvedAt time.Time // zero while open
	// LastFailedAt is when the event last failed (CreatedAt at first).
	LastFailedAt time.Time
	// RetryRequestedAt is set while a retry is asked for and not yet made.
	RetryRequestedAt time.Time
	// Resolution says how a resolved entry ended: applied (a restarted
	// runner applied it), retried (a requested retry applied it),
	// skipped, or, for consumers, stale or deferred.
	Resolution string
	// Kind is "projection" when Consumer names a projection the store
	// knows, "consumer" otherwise (filled by QuarantinedEvents).
	Kind string
	// Type is the event's type when its JSON says (filled by
	// QuarantinedEvents).
	Type string
}

// Quarantine records q inside an Update closure. An open entry for the
// same consumer, tenant, event id and position is updated (attempts and
// error) rather than repeated.
func (tx *Tx) Quarantine(ctx context.Context, q Quarantined) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if q.Evidence == "" {
		q.Evidence = "{}"
	}
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO quarantine (consumer, reason, tenant, subject, version, position, event_id, event, error, attempts, evidence, created_at, last_failed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (consumer, tenant, event_id, position) WHERE resolved_at IS NULL
		DO UPDATE SET reason = excluded.reason, error = excluded.error, attempts = quarantine.attempts + excluded.attempts, evidence = excluded.evidence,
			last_failed_at = excluded.last_failed_at, retry_requested_at = NULL`,
		q.Consumer, q.Reason, q.Tenant, q.Subject, q.Version, q.Position, q.EventID, q.Event, q.Error, q.Attempts, q.Evidence, tx.now, tx.now)
	if err != nil {
		return fmt.Errorf("quarantine %s event %q: %w", q.Consumer, q.EventID, mapErr(err))
	}
	return nil
}

// ResolveQuarantine marks the open entries of consumer at position (or,
// with position 0, for the event id) resolved.
func (tx *Tx) ResolveQuarantine(ctx context.Context, consumer string, position int64, eventID string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	_, err := s.wconn.ExecContext(ctx, `UPDATE quarantine SET resolved_at = ?, resolution = 'applied', retry_requested_at = NULL WHERE consumer = ? AND resolved_at IS NULL
		AND ((? > 0 AND position = ?) OR (? = 0 AND event_id = ?))`, tx.now, consumer, position, position, position, eventID)
	return mapErr(err)
}

// QuarantineFilter selects quarantine entries.
type QuarantineFilter struct {
	Consumer string // "" for every consumer
	Open     bool   // only unresolved entries
}

// QuarantinedEvents lists quarantine entries, oldest first.
func (s *Store) QuarantinedEvents(ctx context.Context, f QuarantineFilter) ([]Quarantined, error) {
	q := quarantineColumns + ` WHERE (? = '' OR consumer = ?)`
	if f.Open {
		q += ` AND resolved_at IS NULL`
	}
	return s.scanQuarantine(s.rdb.QueryContext(ctx, q+` ORDER BY id`, f.Consumer, f.Consumer))
}

// Projection statuses kept in the store. "running" and "idle" are not
// stored: they come from the projection's lease.
const (
	ProjectionActive     = "active"
	ProjectionStopped    = "stopped"
	ProjectionRebuilding = "rebuilding"
)

// SetProjectionStatus records a projection's status with a detail (why
// it stopped, say).
func (tx *Tx) SetProjectionStatus(ctx context.Context, name, status, detail string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO projections (name, status, detail, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET status = excluded.status, detail = excluded.detail, updated_at = excluded.updated_at`,
		name, status, detail, tx.now)
	return mapErr(err)
}

// ProjectionRecord is a projection's stored status and place.
type ProjectionRecord struct {
	Name        string
	Status      string // active, stopped or rebuilding
	Detail      string
	Checkpoint  int64
	Quarantined int // open quarantine entries
	LeaseOwner  string
	LeaseLive   bool // a runner holds an unexpired lease
	UpdatedAt   time.Time
	// LeaseExpiredFor is how long ago the lease expired, by SQLite's
	// clock (negative while it lasts; 0 without a lease owner).
	LeaseExpiredFor time.Duration
	// LeaseTTL is the period the lease's holder took it for
	// (DefaultLeasePeriod when the file does not record it).
	LeaseTTL time.Duration
	// OwnerGone: the lease owner is a process on this host that no longer
	// runs (see OwnerGone).
	OwnerGone bool
	// Orphaned: the owner is gone, its lease expired, and no runner took
	// the lease over within one lease period. Someone must start a runner.
	Orphaned bool
}

// DefaultLeasePeriod stands for the lease period of a lease row written
// before eventlite recorded it.
const DefaultLeasePeriod = 15 * time.Second

// Projections lists the projections the store knows (those that ever ran).
func (s *Store) Projections(ctx context.Context) ([]ProjectionRecord, error) {
	return s.projections(ctx, "")
}

// Projection returns one projection's record; ErrNotFound when it never ran.
func (s *Store) Projection(ctx context.Context, name string) (ProjectionRecord, error) {
	recs, err := s.projections(ctx, name)
	if err != nil {
		return ProjectionRecord{}, err
	}
	if len(recs) == 0 {
		return ProjectionRecord{}, fmt.Errorf("projection %q: %w", name, ErrNotFound)
	}
	return recs[0], nil
}

// projections reads the record of the projection name, or of every
// projection when name is "".
func (s *Store) projections(ctx context.Context, name string) ([]ProjectionRecord, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT p.name, p.status, p.detail, p.updated_at,
		COALESCE((SELECT position FROM checkpoints c WHERE c.name = p.name), 0),
		(SELECT count(*) FROM quarantine q WHERE q.consumer = p.name AND q.resolved_at IS NULL),
		COALESCE(l.owner, ''), COALESCE(l.owner != '' AND l.expires_at > `+nowMillis+`, 0),
		COALESCE(`+nowMillis+` - l.expires_at, 0), COALESCE(l.ttl_ms, 0)
		FROM projections p LEFT JOIN leases l ON l.resource = 'projection:' || p.name
		WHERE ?1 = '' OR p.name = ?1
		ORDER BY p.name`, name)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []ProjectionRecord
	for rows.Next() {
		var r ProjectionRecord
		var updated, expiredFor, ttl int64
		if err := rows.Scan(&r.Name, &r.Status, &r.Detail, &updated, &r.Checkpoint, &r.Quarantined, &r.LeaseOwner, &r.LeaseLive,
			&expiredFor, &ttl); err != nil {
			return nil, err
		}
		r.UpdatedAt = time.Unix(0, updated).UTC()
		if r.LeaseOwner != "" {
			r.LeaseExpiredFor, r.LeaseTTL = time.Duration(expiredFor)*time.Millisecond, time.Duration(ttl)*time.Millisecond
			if r.LeaseTTL <= 0 {
				r.LeaseTTL = DefaultLeasePeriod
			}
			r.OwnerGone = OwnerGone(r.LeaseOwner)
			r.Orphaned = r.OwnerGone && r.LeaseExpiredFor >= r.LeaseTTL
		}
		out = append(out, r)
	}
	return out, mapErr(rows.Err())
}

// Hole is a run of missing global positions between two stored events.
type Hole struct {
	From, To   int64 // inclusive
	DetectedBy string
	DetectedAt time.Time
}

// HolesBetween finds the holes among positions after and up to upto: runs
// of missing positions between stored events. It reads on the read pool.
func (s *Store) HolesBetween(ctx context.Context, after, upto int64) ([]Hole, error) {
	var lo sql.NullInt64
	var n int64
	if err := s.rdb.QueryRowContext(ctx, `SELECT MIN(position), count(*) FROM events WHERE position > ? AND position <= ?`, after, upto).Scan(&lo, &n); err != nil {
		return nil, mapErr(err)
	}
	if !lo.Valid || n == upto-lo.Int64+1 {
		return nil, nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT position + 1, (SELECT MIN(b.position) FROM events b WHERE b.position > a.position) - 1
		FROM events a WHERE a.position >= ? AND a.position < ?
		AND NOT EXISTS (SELECT 1 FROM events c WHERE c.position = a.position + 1)`, lo.Int64, upto)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []Hole
	for rows.Next() {
		var h Hole
		var to sql.NullInt64
		if err := rows.Scan(&h.From, &to); err != nil {
			return nil, err
		}
		if !to.Valid {
			continue // past the newest event: not a hole
		}
		h.To = to.Int64
		out = append(out, h)
	}
	return out, mapErr(rows.Err())
}

// RecordHole records a hole a reader passed.
func (tx *Tx) RecordHole(ctx context.Context, h Hole) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO position_holes (from_position, to_position, detected_by, detected_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (from_position) DO NOTHING`, h.From, h.To, h.DetectedBy, tx.now)
	return mapErr(err)
}

// RecordedHoles lists the holes readers recorded.
func (s *Store) RecordedHoles(ctx context.Context) ([]Hole, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT from_position, to_position, detected_by, detected_at FROM position_holes ORDER BY from_position`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []Hole
	for rows.Next() {
		var h Hole
		var at int64
		if err := rows.Scan(&h.From, &h.To, &h.DetectedBy, &at); err != nil {
			return nil, err
		}
		h.DetectedAt = time.Unix(0, at).UTC()
		out = append(out, h)
	}
	return out, mapErr(rows.Err())
}
