package store

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Erasure (crypto-shredding) is store's mechanism; its public face is
// package store/erasure, which reaches what it needs through inner (see
// inner_erasure.go). An event appended with the erasurekey extension (see
// ExtErasureKey) has its data encrypted with its subject's data key
// (AES-256-GCM, associated data: tenant, stream, event id), created on
// first use per (tenant, subject) and stored wrapped by the master key
// (Options.MasterKey or MasterKeyFile; associated data: tenant, subject,
// master key id). Reads decrypt transparently. Forget destroys the key;
// Scrub then removes the ciphertext that no key opens any more.

// The event Forget appends; package erasure exports them (its tests
// check they agree).
const (
	// typeSubjectForgotten is the event Forget appends to the tenant's
	// stream forgottenStream; its data is subjectForgotten.
	typeSubjectForgotten = envelope.ReservedTypePrefix + "subject.forgotten"
	// forgottenStream is the stream, per tenant, of the
	// eventlite.subject.forgotten events.
	forgottenStream = "eventlite-forgotten"
)

// subjectForgotten is the data of an eventlite.subject.forgotten event
// (erasure.SubjectForgotten).
type subjectForgotten struct {
	ErasureKey string `json:"erasurekey"`
}

// forgetResult says what a forget did; erasure.ForgetResult documents
// its fields.
type forgetResult struct {
	Already   bool
	Event     envelope.Event
	Streams   []string
	Copies    int64
	Tombstone bool
}

// forget is erasure's Forget (see erasure.Eraser.Forget): it forgets a
// subject of a tenant in one transaction, with secure_delete on.
func (s *Store) forget(ctx context.Context, tenant, subject string) (forgetResult, error) {
	a, err := s.prepareForget(tenant, subject)
	if err != nil {
		return forgetResult{}, err
	}
	var res forgetResult
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
		return forgetResult{}, fmt.Errorf("forget subject %q (tenant %s): %w", subject, tenant, err)
	}
	if !res.Already {
		s.log.Info("subject forgotten", "tenant", tenant, "streams", len(res.Streams), "copies", res.Copies)
	}
	return res, nil
}

// forgetTx is Forget's work in tx; a is its prepared
// eventlite.subject.forgotten event.
func (s *Store) forgetTx(ctx context.Context, tx *Tx, a *appendReq, tenant, subject string) (forgetResult, error) {
	var res forgetResult
	// The store's own stream: a delete an older eventlite let a user
	// make (a hard one refused every later forget) is undone.
	revived, err := s.ex.UndeleteStream(ctx, tx, tenant, forgottenStream)
	if err != nil {
		return res, fmt.Errorf("restore the stream %s: %w", forgottenStream, mapErr(err))
	}
	if revived {
		s.log.Warn("the store's own stream had been deleted; restored", "tenant", tenant, "stream", forgottenStream)
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
	ev, err := envelope.New(typeSubjectForgotten, subjectForgotten{ErasureKey: subject})
	if err != nil {
		return nil, err
	}
	ev.Source = "eventlite"
	return s.prepareAppendAs(true, tenant, forgottenStream, Any, []envelope.Event{ev})
}

// ForgetSubject is Forget inside the consumer's transaction: a consumer
// that receives eventlite.subject.forgotten (or an event of a subject
// forgotten here, see txBook.SubjectForgotten) forgets the subject in its
// tenant as Forget does, tombstone included. It runs without Forget's
// secure_delete: run a scrub or scavenge to zero the freed pages.
func (tx txBook) ForgetSubject(ctx context.Context, tenant, subject string) (forgetResult, error) {
	if err := tx.check(); err != nil {
		return forgetResult{}, err
	}
	a, err := tx.s.prepareForget(tenant, subject)
	if err != nil {
		return forgetResult{}, err
	}
	res, err := tx.s.forgetTx(ctx, tx.Tx, a, tenant, subject)
	if err != nil {
		return forgetResult{}, fmt.Errorf("forget subject %q (tenant %s): %w", subject, tenant, err)
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

// scrub is erasure's Scrub (see erasure.Eraser.Scrub): it removes the
// ciphertext of the forgotten subjects' events, then checkpoints the WAL
// with wal_checkpoint(TRUNCATE), and returns how many events lost their
// ciphertext and whether the checkpoint completed.
func (s *Store) scrub(ctx context.Context) (events int64, checkpointed bool, err error) {
	n, err := s.scrubErased(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("scrub: %w", err)
	}
	ok, err := s.checkpointTruncate(ctx)
	if err != nil {
		return n, false, fmt.Errorf("scrub: %w", err)
	}
	s.log.Info("erased data scrubbed", "events", n, "checkpointed", ok)
	return n, ok, nil
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
