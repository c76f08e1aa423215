package store

import (
	"context"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// The extensions of erasure, repeated from envelope so that store users
// need not import it.
const (
	ExtErasureKey    = envelope.ExtErasureKey
	ExtDataErased    = envelope.ExtDataErased
	ExtDataEncrypted = envelope.ExtDataEncrypted
)

// keyCacheSize bounds the unwrapped data keys a store keeps in memory.
const keyCacheSize = 4096

// keyRef names a data key.
type keyRef struct{ tenant, subject string }

// dataKey is a data key as the keyring knows it: its cipher, or the fact
// that it was forgotten, or (without a master key) that it exists.
type dataKey struct {
	aead      cipher.AEAD // nil when forgotten or without a master key
	forgotten bool
	// inputKey keys the hashes of inputs that hold the subject's data
	// (the operation ledger's input hash), derived from the data key:
	// nil with aead.
	inputKey []byte
	// wrapped is the key as stored, wrapped by the master key: the
	// append checks in its transaction that the file still holds this
	// very key (a restore may have replaced it).
	wrapped []byte
}

// keyring unwraps and caches data keys (table erasure_keys, migration
// 0013). The cache holds at most keyCacheSize keys, drops one at random
// when full, and forgets a key in the same process as Forget; another
// process's forget is seen when the poller notices its commit (see
// invalidateAll).
type keyring struct {
	master   cipher.AEAD // nil: the store has no master key
	masterID []byte
	ex       driver.Keys // the store's, set by Open

	mu    sync.Mutex
	cache map[keyRef]*dataKey
	// newestForget is the newest forgotten_at the poller saw (-1: none
	// read yet).
	newestForget int64
}

func newKeyring(master []byte) (*keyring, error) {
	k := &keyring{cache: make(map[keyRef]*dataKey), newestForget: -1}
	if master == nil {
		return k, nil
	}
	if len(master) != masterKeySize {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrMasterKey, len(master), masterKeySize)
	}
	aead, err := newGCM(master)
	if err != nil {
		return nil, err
	}
	k.master, k.masterID = aead, masterKeyID(master)
	return k, nil
}

func (k *keyring) cached(r keyRef) *dataKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cache[r]
}

func (k *keyring) put(r keyRef, d *dataKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.cache) >= keyCacheSize {
		for victim := range k.cache {
			delete(k.cache, victim)
			break
		}
	}
	k.cache[r] = d
}

// drop forgets a cached key.
func (k *keyring) drop(r keyRef) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.cache, r)
}

// invalidateAll empties the cache.
func (k *keyring) invalidateAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.cache)
}

// lookup returns the data key of (tenant, subject), nil when there is
// none. A key that the master key cannot unwrap is a *MasterKeyError.
// Only keys read on q are cached when cache is set: a key read inside a
// transaction that may roll back is not.
func (k *keyring) lookup(ctx context.Context, q driver.ReadQuerier, r keyRef, cache bool) (*dataKey, error) {
	if d := k.cached(r); d != nil {
		return d, nil
	}
	row, found, err := k.ex.DataKey(ctx, q, r.tenant, r.subject)
	if err != nil {
		return nil, fmt.Errorf("read data key of subject %q (tenant %s): %w", r.subject, r.tenant, mapErr(err))
	}
	if !found {
		return nil, nil
	}
	d := &dataKey{forgotten: row.Forgotten, wrapped: row.Wrapped}
	if !d.forgotten && k.master != nil {
		if d.aead, d.inputKey, err = k.unwrap(r, row.MasterKeyID, row.Wrapped); err != nil {
			return nil, err
		}
	}
	if cache {
		k.put(r, d)
	}
	return d, nil
}

// unwrap opens a wrapped data key, and derives its input-hash key.
func (k *keyring) unwrap(r keyRef, id, wrapped []byte) (cipher.AEAD, []byte, error) {
	merr := &MasterKeyError{Tenant: r.tenant, Subject: r.subject, Stored: hex.EncodeToString(id), Given: hex.EncodeToString(k.masterID)}
	if string(id) != string(k.masterID) {
		return nil, nil, merr
	}
	raw, err := open(k.master, wrapped, keyAD(r.tenant, r.subject, id))
	if err != nil {
		return nil, nil, merr
	}
	aead, err := newGCM(raw)
	if err != nil {
		return nil, nil, err
	}
	m := hmac.New(sha256.New, raw)
	m.Write([]byte("eventlite input hash"))
	return aead, m.Sum(nil), nil
}

// checkStoreKey refuses a master key other than the one the store's data
// keys are wrapped by (a store uses one): it reads one live key's master
// key id. A store without keys takes any. Nothing to check without a
// master key.
func (k *keyring) checkStoreKey(ctx context.Context, q driver.ReadQuerier) error {
	if k.master == nil {
		return nil
	}
	id, ok, err := k.ex.AnyMasterKey(ctx, q)
	if err != nil {
		return fmt.Errorf("read the store's master key: %w", mapErr(err))
	}
	if !ok || string(id) == string(k.masterID) {
		return nil
	}
	return &StoreMasterKeyError{Stored: hex.EncodeToString(id), Given: hex.EncodeToString(k.masterID)}
}

// create makes, wraps and inserts a new data key for r on q (a write
// transaction), unless one exists already, and returns the key stored.
func (k *keyring) create(ctx context.Context, tx *Tx, r keyRef, now int64) (*dataKey, error) {
	// Checked in the transaction that inserts the key: another process
	// may have stored keys under its master key since this one opened.
	if err := k.checkStoreKey(ctx, tx); err != nil {
		return nil, err
	}
	raw := make([]byte, masterKeySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("new data key: %w", err)
	}
	wrapped, err := seal(k.master, raw, keyAD(r.tenant, r.subject, k.masterID))
	if err != nil {
		return nil, fmt.Errorf("wrap data key: %w", err)
	}
	if err := k.ex.InsertDataKey(ctx, tx, r.tenant, r.subject, k.masterID, wrapped, now); err != nil {
		return nil, fmt.Errorf("store data key of subject %q (tenant %s): %w", r.subject, r.tenant, mapErr(err))
	}
	return k.lookup(ctx, tx, r, false)
}

// erasureKeyOf returns the event's erasurekey extension, "" when it has
// none.
func erasureKeyOf(e *envelope.Event) string {
	if e.Extensions == nil {
		return ""
	}
	v, _ := e.Extensions[ExtErasureKey].(string)
	return v
}

// openEvents decrypts, in place, the data of the events that carry
// erasurekey, looking their keys up on q (cache tells whether what q
// reads may be cached). A forgotten subject's event loses its data and
// gets dataerased: true; without a master key an encrypted event loses
// its data and gets dataencrypted: true.
func (k *keyring) openEvents(ctx context.Context, q driver.ReadQuerier, cache bool, evs []envelope.Event) error {
	for i := range evs {
		e := &evs[i]
		subject := erasureKeyOf(e)
		if subject == "" {
			continue
		}
		if err := k.openEvent(ctx, q, cache, e, subject); err != nil {
			return err
		}
	}
	return nil
}

func (k *keyring) openEvent(ctx context.Context, q driver.ReadQuerier, cache bool, e *envelope.Event, subject string) error {
	return k.openEventOnce(ctx, q, cache, e, subject, true)
}

// openEventOnce is openEvent; retry lets it read a cached key again once.
func (k *keyring) openEventOnce(ctx context.Context, q driver.ReadQuerier, cache bool, e *envelope.Event, subject string, retry bool) error {
	d, err := k.lookup(ctx, q, keyRef{e.Tenant, subject}, cache)
	if err != nil {
		var me *MasterKeyError
		if errors.As(err, &me) {
			me.Position = e.Position
		}
		return fmt.Errorf("event at position %d: %w", e.Position, err)
	}
	switch {
	case d == nil && e.Data == nil:
		return nil // an event without data never needed a key
	case d == nil:
		return fmt.Errorf("event at position %d: its data is encrypted under subject %q (tenant %s), whose data key is missing from the database", e.Position, subject, e.Tenant)
	case d.forgotten:
		e.Data = nil
		e.Extensions[ExtDataErased] = true
		return nil
	case e.Data == nil:
		return nil
	case d.aead == nil:
		e.Data = nil
		e.Extensions[ExtDataEncrypted] = true
		return nil
	}
	plain, err := open(d.aead, e.Data, dataAD(e.Tenant, e.Stream, e.ID))
	if err != nil && retry && k.cached(keyRef{e.Tenant, subject}) == d {
		// A key cached before a restore replaced the file is not the
		// file's: read the key again, once.
		k.drop(keyRef{e.Tenant, subject})
		return k.openEventOnce(ctx, q, cache, e, subject, false)
	}
	if err != nil {
		return fmt.Errorf("event at position %d: its data does not decrypt with the data key of subject %q (tenant %s): it was altered", e.Position, subject, e.Tenant)
	}
	e.Data = plain
	return nil
}

// noticeForgets empties the cache when a subject was forgotten since the
// last call, by this process or another: the poller calls it at start
// and whenever the file changed. It reads the newest forget through the
// erasure_keys_forgotten index.
func (k *keyring) noticeForgets(ctx context.Context, q driver.ReadQuerier) {
	newest, err := k.ex.NewestForget(ctx, q)
	if err != nil {
		return // the next poll retries
	}
	k.mu.Lock()
	changed := k.newestForget >= 0 && newest != k.newestForget
	k.newestForget = newest
	k.mu.Unlock()
	if changed {
		k.invalidateAll()
	}
}
