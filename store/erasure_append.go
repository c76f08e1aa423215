package store

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/json"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
)

// checkErasureExtensions refuses, on an append of the caller's, the
// extensions the store sets on reads, and an erasurekey that is not a
// non-empty string.
func checkErasureExtensions(i int, e *envelope.Event) error {
	if e.Extensions == nil {
		return nil
	}
	for _, name := range []string{ExtDataErased, ExtDataEncrypted} {
		if _, ok := e.Extensions[name]; ok {
			return &envelope.InvalidError{Index: i, Field: name, Reason: "is set by the store on the events it reads: remove it"}
		}
	}
	if v, ok := e.Extensions[ExtErasureKey]; ok {
		if s, isString := v.(string); !isString || s == "" {
			return &envelope.InvalidError{Index: i, Field: ExtErasureKey, Reason: fmt.Sprintf("want a non-empty string naming the subject whose key encrypts the data, got %T %v", v, v)}
		}
	}
	return nil
}

// sealAppend encrypts the data of a's events that carry erasurekey, after
// validation (the data limit applies to the plaintext). The plaintext
// stays in a.events (the result returns it, and a retry compares it);
// the ciphertext goes into a.sealed, which insertEvents stores. Keys are
// looked up (and created on first use) on tx, or, when tx is nil, in
// the cache, on the read pool, and in a transaction of their own.
func (s *Store) sealAppend(ctx context.Context, a *appendReq, tx *Tx) error {
	for i := range a.events {
		e := &a.events[i]
		subject := erasureKeyOf(e)
		if subject == "" {
			continue
		}
		if s.keys.master == nil {
			return fmt.Errorf("event %d carries %s %q: %w: open the store with a master key (--master-key-file, $EVENTLITE_MASTER_KEY_FILE or Options.MasterKeyFile); nothing was stored", i, ExtErasureKey, subject, ErrNoMasterKey)
		}
		d, err := s.dataKeyFor(ctx, tx, keyRef{a.tenant, subject})
		if err != nil {
			if ie, ok := err.(*envelope.InvalidError); ok {
				c := *ie
				c.Index = i
				return &c
			}
			return err
		}
		if a.aeads == nil {
			a.aeads = make([]cipher.AEAD, len(a.events))
			a.sealed = make([][]byte, len(a.events))
		}
		if a.wrapped == nil {
			a.wrapped = make([][]byte, len(a.events))
		}
		aead := d.aead
		a.aeads[i], a.wrapped[i] = aead, d.wrapped
		if e.Data == nil {
			continue
		}
		if a.sealed[i], err = seal(aead, e.Data, dataAD(a.tenant, a.stream, e.ID)); err != nil {
			return fmt.Errorf("encrypt event %d: %w", i, err)
		}
	}
	return nil
}

// dataKeyFor returns the live data key of r, creating it on first use. A
// forgotten subject is refused: its events read as erased, and a new key
// would not open them.
func (s *Store) dataKeyFor(ctx context.Context, tx *Tx, r keyRef) (*dataKey, error) {
	var (
		d   *dataKey
		err error
	)
	if tx != nil {
		d, err = s.keys.lookup(ctx, tx, r, false)
		if err == nil && d == nil {
			d, err = s.keys.create(ctx, tx, r, tx.now)
		}
	} else {
		d, err = s.keys.lookup(ctx, s.rdb, r, true)
		if err == nil && d == nil {
			err = s.Update(ctx, func(tx *Tx) error {
				var cerr error
				d, cerr = s.keys.create(ctx, tx, r, tx.now)
				return cerr
			})
			if err == nil && d != nil && d.aead != nil {
				s.keys.put(r, d) // committed: safe to cache
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if d.forgotten {
		return nil, &envelope.InvalidError{Index: -1, Field: ExtErasureKey, Reason: fmt.Sprintf("subject %q (tenant %s) was forgotten: its key is destroyed; give new data another subject key", r.subject, r.tenant)}
	}
	return d, nil
}

// sameData reports whether stored data (sealed when aead is set) holds
// plain: a retry of an encrypted event compares plaintexts, since the
// random nonce makes every ciphertext differ. Sealed data that does not
// open (the subject was forgotten, or scrubbed) is not the same.
func sameData(aead cipher.AEAD, stored, plain []byte, tenant, stream, id string) bool {
	if aead == nil || stored == nil {
		return bytes.Equal(stored, plain)
	}
	got, err := open(aead, stored, dataAD(tenant, stream, id))
	return err == nil && bytes.Equal(got, plain)
}

// sameStoredData reports whether the stored data and extensions of an
// event (by id) hold what a.events[i] appends: the same erasurekey, and
// the same data (plaintexts compared when encrypted).
func (s *Store) sameStoredData(a *appendReq, i int, stored, ext []byte) bool {
	e := &a.events[i]
	storedKey := ""
	if ext != nil {
		var m map[string]any
		if json.Unmarshal(ext, &m) != nil {
			return false
		}
		storedKey, _ = m[ExtErasureKey].(string)
	}
	if storedKey != erasureKeyOf(e) {
		return false
	}
	var aead cipher.AEAD
	if a.aeads != nil {
		aead = a.aeads[i]
	}
	return sameData(aead, stored, e.Data, a.tenant, a.stream, e.ID)
}

// checkKeysLive refuses, inside the append's write transaction, an
// append encrypted under a subject that is forgotten now: sealAppend
// may have used a key from the cache, which another process's forget
// does not reach before its poller notices. The forget and this check
// are serialised by the write lock (SQLite: BEGIN IMMEDIATE; PostgreSQL:
// the log_head row), so once a forget commits no append under its
// subject commits after it, in any process. The same step records the
// append's stream as one of the subject's (forget drops its snapshots
// even after its events are gone). Two statements per subject of the
// append; appends without erasurekey pay nothing.
func (s *Store) checkKeysLive(a *appendReq) error {
	if a.aeads == nil {
		return nil
	}
	for i, aead := range a.aeads {
		if aead == nil {
			continue
		}
		subject := erasureKeyOf(&a.events[i])
		seen := false
		for j := range i {
			if a.aeads[j] != nil && erasureKeyOf(&a.events[j]) == subject {
				seen = true
				break
			}
		}
		if seen {
			continue
		}
		live, forgotten, err := s.stmts.SealedUnder(bg, a.tenant, a.stream, subject, a.wrapped[i])
		if err != nil {
			return fmt.Errorf("read data key of subject %q (tenant %s): %w", subject, a.tenant, mapErr(err))
		}
		if !live && !forgotten {
			// The key this process holds is not the file's (a restore
			// replaced the file since it was cached): sealed under it,
			// the data would never open. Nothing is stored; the retry
			// reads the file's key.
			s.keys.drop(keyRef{a.tenant, subject})
			return fmt.Errorf("%w: the data key of subject %q (tenant %s) this process held is no longer the database's (it was restored from a backup since): nothing was stored; retry", ErrBusy, subject, a.tenant)
		}
		if !live {
			s.keys.drop(keyRef{a.tenant, subject})
			return &envelope.InvalidError{Index: i, Field: ExtErasureKey, Reason: fmt.Sprintf("subject %q (tenant %s) was forgotten: its key is destroyed; give new data another subject key", subject, a.tenant)}
		}
	}
	return nil
}
