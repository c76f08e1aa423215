package store

import (
	"context"
	"crypto/cipher"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// What package store/effect (the effect ledger) needs of a Store: its
// ledger rows through the driver, a write transaction's clock, and the
// data keys of erasure subjects, which seal an effect's arguments.

// The states of the ledger's rows that store itself reads (doctor, the
// counts): the names package effect gives its states.
const (
	effectExecuting        = "EXECUTING"
	effectUnknown          = "UNKNOWN"
	effectAwaitingApproval = "AWAITING_APPROVAL"
	effectApproved         = "APPROVED"
)

// EffectRow reads one row of the effect ledger as stored.
func (in inner) EffectRow(ctx context.Context, tenant, key string) (driver.EffectRow, bool, error) {
	r, ok, err := in.s.ex.Effect(ctx, in.s.rdb, tenant, key)
	return r, ok, mapErr(err)
}

// EffectRows lists the ledger's rows of tenant ("" for every tenant) in
// one of states (none for every state), oldest update first.
func (in inner) EffectRows(ctx context.Context, tenant string, states []string) ([]driver.EffectRow, error) {
	rows, err := in.s.ex.ListEffects(ctx, in.s.rdb, tenant, states)
	return rows, mapErr(err)
}

// ReserveEffect inserts row in tx unless its tenant and key exist, and
// passes the stored row to decide (driver.Effects.ReserveEffect).
func (in inner) ReserveEffect(ctx context.Context, tx *Tx, row driver.EffectRow, decide func(cur *driver.EffectRow) (bool, error)) (driver.EffectRow, bool, error) {
	if err := tx.check(); err != nil {
		return driver.EffectRow{}, false, err
	}
	r, created, err := in.s.ex.ReserveEffect(ctx, in.s.wconn, row, decide)
	return r, created, mapErr(err)
}

// UpdateEffect reads the effect in tx and writes back what decide left
// (driver.Effects.UpdateEffect).
func (in inner) UpdateEffect(ctx context.Context, tx *Tx, tenant, key string, decide func(cur *driver.EffectRow) (bool, error)) (driver.EffectRow, bool, error) {
	if err := tx.check(); err != nil {
		return driver.EffectRow{}, false, err
	}
	r, found, err := in.s.ex.UpdateEffect(ctx, in.s.wconn, tenant, key, decide)
	return r, found, mapErr(err)
}

// Now is tx's time, unix nanoseconds: the time of every row it writes.
func (in inner) Now(tx *Tx) int64 { return tx.now }

// openedEffect is a ledger row with its sealed columns opened.
type openedEffect struct {
	// Row is the row, its Args and LastError in clear (empty when they
	// cannot be read).
	Row driver.EffectRow
	// Subject is the erasure subject whose key seals the row, "" for a
	// row in clear.
	Subject string
	// Erased: the subject was forgotten; Args and LastError are gone.
	Erased bool
	// Encrypted: the store has no master key; Args and LastError are
	// not shown.
	Encrypted bool
}

// An effect whose arguments hold a subject's data (effect.Intent.ErasureKey)
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

// OpenEffect opens r's sealed arguments and error text with the key of
// their subject, read in tx (nil: on the read pool): gone (Erased) once
// the subject is forgotten, hidden (Encrypted) without the master key.
func (in inner) OpenEffect(ctx context.Context, tx *Tx, r driver.EffectRow) (openedEffect, error) {
	s := in.s
	var q driver.ReadQuerier = s.rdb
	if tx != nil {
		q = tx
	}
	subject, sealedArgs, ok := splitSealed(r.Args)
	if !ok {
		return openedEffect{Row: r}, nil
	}
	o := openedEffect{Row: r, Subject: subject}
	o.Row.Args, o.Row.LastError = "", ""
	aead, erased, err := s.effectKey(ctx, q, r.Tenant, subject, false)
	switch {
	case err != nil:
		return openedEffect{}, fmt.Errorf("effect %q (tenant %s): %w", r.Key, r.Tenant, err)
	case erased:
		o.Erased = true
		return o, nil
	case aead == nil:
		o.Encrypted = true
		return o, nil
	}
	if sealedArgs != nil {
		b, err := open(aead, sealedArgs, effectAD("args", r.Tenant, r.Key))
		if err != nil {
			return openedEffect{}, fmt.Errorf("effect %q (tenant %s): its arguments do not decrypt with the data key of subject %q: they were altered", r.Key, r.Tenant, subject)
		}
		o.Row.Args = string(b)
	}
	if _, sealedErr, ok := splitSealed(r.LastError); ok && sealedErr != nil {
		b, err := open(aead, sealedErr, effectAD("last_error", r.Tenant, r.Key))
		if err != nil {
			return openedEffect{}, fmt.Errorf("effect %q (tenant %s): its error text does not decrypt with the data key of subject %q: it was altered", r.Key, r.Tenant, subject)
		}
		o.Row.LastError = string(b)
	} else if !ok {
		o.Row.LastError = r.LastError // written in clear after a forget
	}
	return o, nil
}

// SealEffect is the ledger row to write in tx for plain (its Args and
// LastError in clear), those two sealed with the key of subject ("":
// none, the row stays in clear), created on first use when create is
// set. old is the row as stored (nil for a new one): once the subject is
// forgotten nothing can be sealed, so its sealed columns are written back
// as they were, and an error text written after the forget is kept in
// clear.
func (in inner) SealEffect(ctx context.Context, tx *Tx, plain driver.EffectRow, subject string, old *driver.EffectRow, create bool) (driver.EffectRow, error) {
	s := in.s
	row := plain
	if subject == "" {
		return row, nil
	}
	if s.keys.master == nil && old == nil {
		return row, fmt.Errorf("effect %q carries %s %q: %w: open the store with a master key (--master-key-file, $EVENTLITE_MASTER_KEY_FILE or Options.MasterKeyFile); nothing was stored",
			plain.Key, envelope.ExtErasureKey, subject, ErrNoMasterKey)
	}
	aead, _, err := s.effectKey(ctx, tx, plain.Tenant, subject, create)
	if err != nil {
		return row, err
	}
	if aead == nil {
		if old == nil {
			return row, &envelope.InvalidError{Index: -1, Field: envelope.ExtErasureKey, Reason: fmt.Sprintf("subject %q (tenant %s) was forgotten: its key is destroyed; an effect on its data cannot be recorded", subject, plain.Tenant)}
		}
		row.Args = old.Args
		if plain.LastError == "" {
			row.LastError = old.LastError
		}
		return row, nil
	}
	if row.Args, err = sealEffectText(aead, subject, "args", plain.Tenant, plain.Key, plain.Args); err != nil {
		return row, err
	}
	if plain.LastError != "" {
		if row.LastError, err = sealEffectText(aead, subject, "last_error", plain.Tenant, plain.Key, plain.LastError); err != nil {
			return row, err
		}
	}
	return row, nil
}
