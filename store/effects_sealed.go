package store

import (
	"context"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// An effect whose arguments hold a subject's data (EffectRun.ErasureKey)
// keeps its arguments and its error text encrypted with the subject's
// data key, as an event's data is: forget destroys the key, and with it
// every way to read them or to confirm a guess of them (their hash is
// computed from the arguments, never stored). A sealed column holds
// "e1:", the subject (base64url), ":" and the sealed bytes (base64; none
// for an effect without arguments or error text), so that the subject
// is known without the key.
const sealedEffectPrefix = "e1:"

// effectAD is the associated data of a sealed effect column: the
// column, tenant and key, so that sealed text moved to another effect
// or column does not open.
func effectAD(column, tenant, key string) []byte {
	return associatedData("effect", column, tenant, key)
}

// sealEffectText seals plain ("" stays empty) as a sealed column of
// subject.
func sealEffectText(aead cipher.AEAD, subject, column, tenant, key, plain string) (string, error) {
	out := sealedEffectPrefix + base64.RawURLEncoding.EncodeToString([]byte(subject)) + ":"
	if plain == "" {
		return out, nil
	}
	b, err := seal(aead, []byte(plain), effectAD(column, tenant, key))
	if err != nil {
		return "", err
	}
	return out + base64.StdEncoding.EncodeToString(b), nil
}

// splitSealed reads a sealed column: its subject and sealed bytes; ok
// is false for a column in clear.
func splitSealed(v string) (subject string, sealed []byte, ok bool) {
	rest, found := strings.CutPrefix(v, sealedEffectPrefix)
	if !found {
		return "", nil, false
	}
	subj, payload, found := strings.Cut(rest, ":")
	if !found {
		return "", nil, false
	}
	s, err := base64.RawURLEncoding.DecodeString(subj)
	if err != nil {
		return "", nil, false
	}
	if payload == "" {
		return string(s), nil, true
	}
	b, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil, false
	}
	return string(s), b, true
}

// effectKey returns the data key of the effect's subject read on q:
// created on first use when create is set (q a write transaction). A
// nil cipher with a nil error: the subject is forgotten (erased) or the
// store has no master key (encrypted).
func (s *Store) effectKey(ctx context.Context, q driver.ReadQuerier, tenant, subject string, create bool) (aead cipher.AEAD, erased bool, err error) {
	r := keyRef{tenant, subject}
	d, err := s.keys.lookup(ctx, q, r, false)
	if err != nil {
		return nil, false, err
	}
	if d == nil && create {
		tx, ok := q.(*Tx)
		if !ok {
			return nil, false, fmt.Errorf("effect: no transaction to create the data key of subject %q in", subject)
		}
		if d, err = s.keys.create(ctx, tx, r, tx.now); err != nil {
			return nil, false, err
		}
	}
	switch {
	case d == nil:
		return nil, false, fmt.Errorf("effect of subject %q (tenant %s): its arguments are encrypted under a data key that is missing from the database", subject, tenant)
	case d.forgotten:
		return nil, true, nil
	}
	return d.aead, false, nil
}

// openEffectRow is the effect a ledger row holds, its sealed arguments
// and error text opened with the subject's key read on q: gone
// (ArgsErased) once the subject is forgotten, hidden (ArgsEncrypted)
// without the master key.
func (s *Store) openEffectRow(ctx context.Context, q driver.ReadQuerier, r driver.EffectRow) (Effect, error) {
	subject, sealedArgs, ok := splitSealed(r.Args)
	if !ok {
		return effectOf(r), nil
	}
	plain := r
	plain.Args, plain.LastError = "", ""
	e := effectOf(plain)
	e.ErasureKey = subject
	aead, erased, err := s.effectKey(ctx, q, r.Tenant, subject, false)
	switch {
	case err != nil:
		return Effect{}, fmt.Errorf("effect %q (tenant %s): %w", r.Key, r.Tenant, err)
	case erased:
		e.ArgsErased = true
		return e, nil
	case aead == nil:
		e.ArgsEncrypted = true
		return e, nil
	}
	if sealedArgs != nil {
		b, err := open(aead, sealedArgs, effectAD("args", r.Tenant, r.Key))
		if err != nil {
			return Effect{}, fmt.Errorf("effect %q (tenant %s): its arguments do not decrypt with the data key of subject %q: they were altered", r.Key, r.Tenant, subject)
		}
		e.Args = json.RawMessage(b)
	}
	if _, sealedErr, ok := splitSealed(r.LastError); ok && sealedErr != nil {
		b, err := open(aead, sealedErr, effectAD("last_error", r.Tenant, r.Key))
		if err != nil {
			return Effect{}, fmt.Errorf("effect %q (tenant %s): its error text does not decrypt with the data key of subject %q: it was altered", r.Key, r.Tenant, subject)
		}
		e.LastError = string(b)
	} else if !ok {
		e.LastError = r.LastError // written in clear after a forget
	}
	return e, nil
}

// sealEffectRow is the ledger row of e, its arguments and error text
// sealed with the key of e.ErasureKey read on q (a write transaction;
// created on first use when create is set). old is the row as stored
// (nil for a new one): once the subject is forgotten nothing can be
// sealed, so its sealed columns are written back as they were, and an
// error text written after the forget is kept in clear.
func (s *Store) sealEffectRow(ctx context.Context, q driver.ReadQuerier, e Effect, old *driver.EffectRow, create bool) (driver.EffectRow, error) {
	row := effectRow(e)
	if e.ErasureKey == "" {
		return row, nil
	}
	if s.keys.master == nil && old == nil {
		return row, fmt.Errorf("effect %q carries %s %q: %w: open the store with a master key (--master-key-file, $EVENTLITE_MASTER_KEY_FILE or Options.MasterKeyFile); nothing was stored",
			e.Key, ExtErasureKey, e.ErasureKey, ErrNoMasterKey)
	}
	aead, _, err := s.effectKey(ctx, q, e.Tenant, e.ErasureKey, create)
	if err != nil {
		return row, err
	}
	if aead == nil {
		if old == nil {
			return row, &envelope.InvalidError{Index: -1, Field: ExtErasureKey, Reason: fmt.Sprintf("subject %q (tenant %s) was forgotten: its key is destroyed; an effect on its data cannot be recorded", e.ErasureKey, e.Tenant)}
		}
		row.Args = old.Args
		if e.LastError == "" {
			row.LastError = old.LastError
		}
		return row, nil
	}
	if row.Args, err = sealEffectText(aead, e.ErasureKey, "args", e.Tenant, e.Key, string(e.Args)); err != nil {
		return row, err
	}
	if e.LastError != "" {
		if row.LastError, err = sealEffectText(aead, e.ErasureKey, "last_error", e.Tenant, e.Key, e.LastError); err != nil {
			return row, err
		}
	}
	return row, nil
}
