package driver

import "context"

// Keys keeps the erasure data keys (stored wrapped by the master key;
// the driver never sees a key in clear) and removes what a forgotten
// subject leaves behind: its key, its events' ciphertext and the data of
// the copies of its events that other tables keep.
type Keys interface {
	// AnyLiveKey reports whether a data key is stored that is not
	// forgotten.
	AnyLiveKey(ctx context.Context, q ReadQuerier) (bool, error)
	// DataKey reads the data key of (tenant, subject); found is false for
	// none.
	DataKey(ctx context.Context, q ReadQuerier, tenant, subject string) (k DataKeyRow, found bool, err error)
	// InsertDataKey stores a new wrapped data key unless (tenant,
	// subject) has one already, which it keeps: two writers creating the
	// same key both read the one stored first afterwards.
	InsertDataKey(ctx context.Context, q Querier, tenant, subject string, masterKeyID, wrapped []byte, at int64) error
	// ForgetDataKey destroys the wrapped key of (tenant, subject) and
	// marks it forgotten at at. found is false when there was no key: a
	// tombstone row (no key, forgotten at at) is inserted then, for a
	// subject whose events the store only received. already is true
	// when it was forgotten before, and then nothing is written. The check and the destruction must be atomic (SQLite: the
	// write transaction; PostgreSQL: the row lock of an UPDATE ... WHERE
	// forgotten_at IS NULL).
	ForgetDataKey(ctx context.Context, q Querier, tenant, subject string, at int64) (found, already bool, err error)
	// NewestForget reads the newest time a key was forgotten, 0 when
	// none was.
	NewestForget(ctx context.Context, q ReadQuerier) (int64, error)
	// SubjectStreams lists the tenant's streams that were appended
	// events whose erasurekey is subject: the record SealedUnder keeps,
	// which outlives the events, and the events still in the log.
	SubjectStreams(ctx context.Context, q ReadQuerier, tenant, subject string) ([]string, error)
	// DropSubjectSnapshots drops the snapshots of a stream.
	DropSubjectSnapshots(ctx context.Context, q Querier, tenant, stream string) error
	// EraseCopies removes the data (marking dataerased: true) from the
	// copies of subject's events that kind keeps, and returns how many
	// copies it changed. A quarantined copy's error text, which may have
	// quoted the data, becomes ErasedError.
	EraseCopies(ctx context.Context, q Querier, kind CopyKind, tenant, subject string) (int64, error)
	// AnyMasterKey reads the id of the master key that wraps one key
	// not forgotten (any one: a store uses one master key); ok is false
	// when there is none. One index step, not a scan.
	AnyMasterKey(ctx context.Context, q ReadQuerier) (id []byte, ok bool, err error)
	// MasterKeys lists the ids of the master keys that wrap the keys not
	// forgotten, with how many each wraps, most first.
	MasterKeys(ctx context.Context, q ReadQuerier) ([]MasterKeyUse, error)
	// EraseOutboxErrors sets the last error recorded for the outbox rows
	// of subject's events of tenant (a sink's reply may have quoted the
	// data) to ErasedError, and returns how many rows it changed.
	EraseOutboxErrors(ctx context.Context, q Querier, tenant, subject string) (int64, error)
	// EraseSubjectTags erases the tags of the tenant's events under
	// subject (the erasurekey extension): the envelope.ExtTags extension
	// leaves their stored extensions and their rows leave event_tags, so
	// that no query or condition matches them again (a user name the
	// subject claimed becomes free). It returns how many events lost
	// their tags.
	EraseSubjectTags(ctx context.Context, q Querier, tenant, subject string) (int64, error)
	// ScrubErased removes the ciphertext of the events of forgotten
	// subjects and returns how many events lost it.
	ScrubErased(ctx context.Context, q Querier) (int64, error)
	// ForgottenSubjects lists every forgotten subject (destroyed keys
	// and tombstones) in (tenant, subject) order, with when it was
	// forgotten.
	ForgottenSubjects(ctx context.Context, q ReadQuerier) ([]ForgottenKey, error)
}

// ForgottenKey is a forgotten subject of a tenant and when it was
// forgotten (unix nanoseconds).
type ForgottenKey struct {
	Tenant, Subject string
	At              int64
}

// DataKeyRow is a stored data key: the id of the master key that wrapped
// it and the wrapped key (both nil once forgotten).
type DataKeyRow struct {
	MasterKeyID, Wrapped []byte
	Forgotten            bool
}

// CopyKind names a place that keeps copies of events as structured JSON.
type CopyKind string

// The places that keep copies of events.
const (
	CopiesQuarantine       CopyKind = "quarantine"
	CopiesDeferred         CopyKind = "deferred"
	CopiesVersionConflicts CopyKind = "version_conflicts"
)

// EventCopyKinds are every CopyKind, in the order Forget erases them.
var EventCopyKinds = []CopyKind{CopiesQuarantine, CopiesDeferred, CopiesVersionConflicts}

// ErasedError replaces an error text that Forget erased.
const ErasedError = "erased with the data of a forgotten subject (the error text may have quoted it)"

// MasterKeyUse is a master key's id and the number of data keys it wraps.
type MasterKeyUse struct {
	ID   []byte
	Keys int64
}
