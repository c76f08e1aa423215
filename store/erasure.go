package store

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Erasure forgets subjects by crypto-shredding, reached with
// Store.Erasure. An event appended with the erasurekey extension (see
// ExtErasureKey) has its data encrypted with its subject's data key
// (AES-256-GCM, associated data: tenant, stream, event id), created on
// first use per (tenant, subject) and stored wrapped by the master key
// (Options.MasterKey or MasterKeyFile; associated data: tenant, subject,
// master key id). Reads decrypt transparently. Forget destroys the key;
// Scrub then removes the ciphertext that no key opens any more.
type Erasure struct{ s *Store }

// Erasure returns the store's erasure handle.
func (s *Store) Erasure() *Erasure { return &Erasure{s: s} }

// The event Forget appends.
const (
	// TypeSubjectForgotten is the event Forget appends to the tenant's
	// stream ForgottenStream; its data is SubjectForgotten. Read models
	// that derived anything from the subject's events purge it on this
	// event.
	TypeSubjectForgotten = envelope.ReservedTypePrefix + "subject.forgotten"
	// ForgottenStream is the stream, per tenant, of the
	// eventlite.subject.forgotten events.
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

// HasMasterKey reports whether the store was opened with a master key.
func (e *Erasure) HasMasterKey() bool { return e.s.keys.master != nil }

// Encrypted reports whether the store holds data keys that are not
// forgotten, that is encrypted events a store opened without a master key
// cannot show. Commands that show or publish data refuse to start without
// a master key while it is true.
func (e *Erasure) Encrypted(ctx context.Context) (bool, error) {
	ok, err := e.s.ex.AnyLiveKey(ctx, e.s.rdb)
	if err != nil {
		return false, fmt.Errorf("read data keys: %w", mapErr(err))
	}
	return ok, nil
}

// Forget forgets a subject of a tenant, in one transaction: it destroys
// the subject's data key, drops the snapshots of the tenant's streams
// that were ever appended the subject's events (a record kept at append
// outlives the events), removes the data from the copies of those
// events held in quarantine, deferral and version conflicts, and appends
// eventlite.subject.forgotten {"erasurekey": subject} to the tenant's
// stream eventlite-forgotten. From then on the subject's events read with
// their attributes, no data, and the extension dataerased: true. It needs
// no master key. Other tenants' keys are untouched.
//
// A subject without a key (its events were only received, from another
// service, or none ever carried it) gets a tombstone (Tombstone): a
// consumer then stores a redelivered event of the subject without its
// data, and an append under it is refused. One forgotten before returns
// Already and does nothing. The ciphertext stays
// in the file until Scrub.
func (e *Erasure) Forget(ctx context.Context, tenant, subject string) (ForgetResult, error) {
	s := e.s
	a, err := s.prepareForget(tenant, subject)
	if err != nil {
		return ForgetResult{}, err
	}
	var res ForgetResult
	// secure_delete on: the wrapped key and the dropped snapshots and
	// copies leave no bytes behind in the pages they freed.
	err = s.withSecureDelete(ctx, func() error {
		return s.Update(ctx, func(tx *Tx) error {
			var err error
			res, err = s.forgetTx(ctx, tx, a, tenant, subject)
			return err
		})
	})
	s.keys.drop(keyRef{tenant, subject})
	if err != nil {
		return ForgetResult{}, fmt.Errorf("forget subject %q (tenant %s): %w", subject, tenant, err)
	}
	if !res.Already {
		s.log.Info("subject forgotten", "tenant", tenant, "streams", len(res.Streams), "copies", res.Copies)
	}
	return res, nil
}

// forgetTx is Forget's work in tx; a is its prepared
// eventlite.subject.forgotten event.
func (s *Store) forgetTx(ctx context.Context, tx *Tx, a *appendReq, tenant, subject string) (ForgetResult, error) {
	var res ForgetResult
	// The store's own stream: a delete an older eventlite let a user
	// make (a hard one refused every later forget) is undone.
	revived, err := s.ex.UndeleteStream(ctx, tx, tenant, ForgottenStream)
	if err != nil {
		return res, fmt.Errorf("restore the stream %s: %w", ForgottenStream, mapErr(err))
	}
	if revived {
		s.log.Warn("the store's own stream had been deleted; restored", "tenant", tenant, "stream", ForgottenStream)
	}
	found, already, err := s.ex.ForgetDataKey(ctx, tx, tenant, subject, tx.now)
	switch {
	case err != nil:
		return res, fmt.Errorf("destroy data key: %w", mapErr(err))
	case already:
		res.Already = true
		return res, nil
	}
	res.Tombstone = !found
	if res.Streams, err = s.ex.SubjectStreams(ctx, tx, tenant, subject); err != nil {
		return res, fmt.Errorf("find the subject's streams: %w", mapErr(err))
	}
	for _, st := range res.Streams {
		if err := s.ex.DropSubjectSnapshots(ctx, tx, tenant, st); err != nil {
			return res, fmt.Errorf("drop snapshots of %q: %w", st, mapErr(err))
		}
	}
	if res.Copies, err = eraseCopies(ctx, tx, tenant, subject); err != nil {
		return res, err
	}
	// The tags of the subject's events go with their data: a name the
	// subject claimed becomes free.
	if _, err := s.ex.EraseSubjectTags(ctx, tx, tenant, subject); err != nil {
		return res, fmt.Errorf("erase the subject's tags: %w", mapErr(err))
	}
	// A sink's reply recorded as a failure may have quoted the data.
	if _, err := s.ex.EraseOutboxErrors(ctx, tx, tenant, subject); err != nil {
		return res, fmt.Errorf("erase the outbox's error texts: %w", mapErr(err))
	}
	r, err := tx.appendPrepared(ctx, a)
	if err != nil {
		return res, err
	}
	res.Event = r.Events[0]
	return res, nil
}

// prepareForget validates a forget and prepares its
// eventlite.subject.forgotten event.
func (s *Store) prepareForget(tenant, subject string) (*appendReq, error) {
	if err := envelope.ValidateTenant(tenant); err != nil {
		return nil, err
	}
	if subject == "" {
		return nil, &envelope.InvalidError{Index: -1, Field: ExtErasureKey, Reason: "empty subject key: name the subject to forget"}
	}
	ev, err := envelope.New(TypeSubjectForgotten, SubjectForgotten{ErasureKey: subject})
	if err != nil {
		return nil, err
	}
	ev.Source = "eventlite"
	return s.prepareAppendAs(true, tenant, ForgottenStream, Any, []envelope.Event{ev})
}

// ForgetSubject is Forget inside the consumer's transaction: a consumer
// that receives eventlite.subject.forgotten (or an event of a subject
// forgotten here, see SubjectForgotten) forgets the subject in its
// tenant as Forget does, tombstone included. It runs without Forget's
// secure_delete: run a scrub or scavenge to zero the freed pages.
func (tx txBook) ForgetSubject(ctx context.Context, tenant, subject string) (ForgetResult, error) {
	if err := tx.check(); err != nil {
		return ForgetResult{}, err
	}
	a, err := tx.s.prepareForget(tenant, subject)
	if err != nil {
		return ForgetResult{}, err
	}
	res, err := tx.s.forgetTx(ctx, tx.Tx, a, tenant, subject)
	if err != nil {
		return ForgetResult{}, fmt.Errorf("forget subject %q (tenant %s): %w", subject, tenant, err)
	}
	tx.s.keys.drop(keyRef{tenant, subject})
	return res, nil
}

// SubjectForgotten reports whether subject was forgotten in tenant (its
// key destroyed, or a tombstone kept for a subject of outside events):
// a consumer stores a received event of such a subject without its
// data.
func (tx txBook) SubjectForgotten(ctx context.Context, tenant, subject string) (bool, error) {
	if err := tx.check(); err != nil {
		return false, err
	}
	row, found, err := tx.s.ex.DataKey(ctx, tx.Tx, tenant, subject)
	if err != nil {
		return false, fmt.Errorf("read data key of subject %q (tenant %s): %w", subject, tenant, mapErr(err))
	}
	return found && row.Forgotten, nil
}

// eraseCopies removes the data from the copies of the subject's events
// that quarantine, deferral and version conflicts keep, and returns how
// many it changed.
func eraseCopies(ctx context.Context, tx *Tx, tenant, subject string) (int64, error) {
	var n int64
	for _, kind := range driver.EventCopyKinds {
		k, err := tx.s.ex.EraseCopies(ctx, tx, kind, tenant, subject)
		if err != nil {
			return 0, fmt.Errorf("erase copies in %s: %w", kind, mapErr(err))
		}
		n += k
	}
	return n, nil
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
func (e *Erasure) Scrub(ctx context.Context) (ScrubResult, error) {
	s := e.s
	var res ScrubResult
	n, err := s.scrubErased(ctx)
	if err != nil {
		return ScrubResult{}, fmt.Errorf("scrub: %w", err)
	}
	res.Events = n
	ok, err := s.checkpointTruncate(ctx)
	if err != nil {
		return res, fmt.Errorf("scrub: %w", err)
	}
	res.Checkpointed = ok
	s.log.Info("erased data scrubbed", "events", res.Events, "checkpointed", ok)
	return res, nil
}

// scrubErased removes the ciphertext of the forgotten subjects' events,
// with secure_delete on, and returns how many events lost it. Scrub and
// the scavenge run it.
func (s *Store) scrubErased(ctx context.Context) (int64, error) {
	var n int64
	err := s.withSecureDelete(ctx, func() error {
		return s.Update(ctx, func(tx *Tx) error {
			var err error
			if n, err = s.ex.ScrubErased(ctx, tx); err != nil {
				return fmt.Errorf("remove erased ciphertext: %w", mapErr(err))
			}
			return nil
		})
	})
	return n, err
}

// checkpointTruncate runs wal_checkpoint(TRUNCATE) on a read connection
// (outside any transaction, as a checkpoint must be) and reports whether
// it completed.
func (s *Store) checkpointTruncate(ctx context.Context) (bool, error) {
	busy, _, _, err := s.ex.CheckpointWAL(ctx, s.rdb)
	if err != nil {
		return false, fmt.Errorf("wal_checkpoint(TRUNCATE): %w", mapErr(err))
	}
	return !busy, nil
}
