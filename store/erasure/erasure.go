package erasure

import (
	"context"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// Eraser forgets the subjects of a store and scrubs their ciphertext.
// An event appended with the erasurekey extension (envelope.ExtErasureKey)
// has its data encrypted with its subject's data key (AES-256-GCM,
// associated data: tenant, stream, event id), created on first use per
// (tenant, subject) and stored wrapped by the master key
// (store.Options.MasterKey or MasterKeyFile; associated data: tenant,
// subject, master key id). Reads decrypt transparently. Forget destroys
// the key; Scrub then removes the ciphertext that no key opens any more.
type Eraser struct{ s *store.Store }

// For returns the erasure handle of s.
func For(s *store.Store) *Eraser { return &Eraser{s: s} }

// The event Forget appends.
const (
	// TypeSubjectForgotten is the event Forget appends to the tenant's
	// stream ForgottenStream; its data is SubjectForgotten. Read models
	// that derived anything from the subject's events purge it on this
	// event.
	TypeSubjectForgotten = envelope.ReservedTypePrefix + "subject.forgotten"
	// ForgottenStream is the stream, per tenant, of the
	// eventlite.subject.forgotten events; only the store appends to it.
	ForgottenStream = "eventlite-forgotten"
)

// SubjectForgotten is the data of an eventlite.subject.forgotten event.
type SubjectForgotten struct {
	ErasureKey string `json:"erasurekey"`
}

// ForgetResult says what Forget did.
type ForgetResult struct {
	// Already is true when the subject had been forgotten before: nothing
	// was done this time.
	Already bool
	// Event is the eventlite.subject.forgotten event appended (zero when
	// Already).
	Event envelope.Event
	// Streams are the tenant's streams that were ever appended events
	// of the subject (even if a scavenge removed them since); their
	// snapshots were dropped.
	Streams []string
	// Copies counts the copies of the subject's events set aside in
	// quarantine, deferral and version conflicts whose data was removed.
	Copies int64
	// Tombstone is true when the store held no key of the subject (it
	// only received its events, from another service): a tombstone was
	// kept in its place.
	Tombstone bool
}

// Forget forgets a subject of a tenant, in one transaction: it destroys
// the subject's data key, drops the snapshots of the tenant's streams
// that were ever appended the subject's events (a record kept at append
// outlives the events), removes the data from the copies of those
// events held in quarantine, deferral and version conflicts, erases
// their tags and the outbox's error texts about them, and appends
// eventlite.subject.forgotten {"erasurekey": subject} to the tenant's
// stream eventlite-forgotten. From then on the subject's events read with
// their attributes, no data, and the extension dataerased: true. It needs
// no master key. Other tenants' keys are untouched.
//
// A subject without a key (its events were only received, from another
// service, or none ever carried it) gets a tombstone (Tombstone): a
// consumer then stores a redelivered event of the subject without its
// data, and an append under it is refused. One forgotten before returns
// Already and does nothing. The ciphertext stays in the file until
// Scrub.
func (e *Eraser) Forget(ctx context.Context, tenant, subject string) (ForgetResult, error) {
	r, err := store.Inner(inside.Key{}, e.s).Forget(ctx, tenant, subject)
	if err != nil {
		return ForgetResult{}, err
	}
	return ForgetResult{Already: r.Already, Event: r.Event, Streams: r.Streams, Copies: r.Copies, Tombstone: r.Tombstone}, nil
}

// ScrubResult says what Scrub removed.
type ScrubResult struct {
	// Events is the number of erased events whose ciphertext was removed.
	Events int64
	// Checkpointed is true when the WAL was checkpointed and truncated
	// (false when readers held it: run Scrub again when they are done).
	Checkpointed bool
}

// Scrub removes the ciphertext of the forgotten subjects' events (the
// data keys are destroyed by Forget already), with SQLite's secure_delete
// on, so the bytes are overwritten in the file, then checkpoints the WAL
// with wal_checkpoint(TRUNCATE), so that no old page survives in it. The
// events keep their attributes and read as erased. Retention's scavenge
// runs it; a backup taken before still holds the ciphertext and its
// wrapped key, and decrypts with the master key.
func (e *Eraser) Scrub(ctx context.Context) (ScrubResult, error) {
	n, ok, err := store.Inner(inside.Key{}, e.s).Scrub(ctx)
	return ScrubResult{Events: n, Checkpointed: ok}, err
}

// HasMasterKey reports whether the store was opened with a master key.
func (e *Eraser) HasMasterKey() bool { return store.Inner(inside.Key{}, e.s).HasMasterKey() }

// Encrypted reports whether the store holds data keys that are not
// forgotten, that is encrypted events a store opened without a master key
// cannot show. Commands that show or publish data refuse to start without
// a master key while it is true.
func (e *Eraser) Encrypted(ctx context.Context) (bool, error) {
	return store.Inner(inside.Key{}, e.s).Encrypted(ctx)
}
