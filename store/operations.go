package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// ErrIdempotencyMismatch: an operation id was reused with a different
// input. Permanent: send a new operation id for a new operation.
var ErrIdempotencyMismatch = errors.New("operation id reused with a different input")

// IdempotencyMismatchError names the operation whose id was reused and
// what differs: the stream and the type with both values, else "the data
// differs" (the ledger keeps a hash of the input, never the data, so that
// erasing an event's data reaches every copy). errors.Is(err,
// ErrIdempotencyMismatch) and errors.Is(err, ErrInvalidEvent) hold for
// it: it is bad input.
type IdempotencyMismatchError struct {
	Tenant      string
	OperationID string
	StoredType  string
	GivenType   string
	// StoredStream and GivenStream are the streams of the first
	// operation and of this one, when the caller knows them (an
	// aggregate.Handler does; "" otherwise).
	StoredStream string
	GivenStream  string
}

func (e *IdempotencyMismatchError) Error() string {
	var diff []string
	if e.StoredStream != e.GivenStream {
		diff = append(diff, fmt.Sprintf("the stream differs (stored %q, given %q)", e.StoredStream, e.GivenStream))
	}
	if e.StoredType != e.GivenType {
		diff = append(diff, fmt.Sprintf("the type differs (stored %s, given %s)", e.StoredType, e.GivenType))
	}
	if len(diff) == 0 {
		diff = append(diff, "the data differs (the ledger keeps its hash, not the data)")
	}
	return fmt.Sprintf("operation %q (tenant %s) was already done with a different input: %s: use a new operation id for a new operation",
		e.OperationID, e.Tenant, strings.Join(diff, "; "))
}

// Unwrap lets errors.Is match ErrIdempotencyMismatch and ErrInvalidEvent.
func (e *IdempotencyMismatchError) Unwrap() []error {
	return []error{ErrIdempotencyMismatch, ErrInvalidEvent}
}

// Operation is one row of the operation ledger: an idempotent command
// that was carried out, with what it returned.
type Operation struct {
	Tenant    string
	ID        string
	Type      string // the operation (command) type
	InputHash string // a hash of the canonical input
	Result    []byte // what the first execution returned, as the caller encoded it
	CreatedAt time.Time
	// ErasureKey, when set, names the subject whose data the input
	// holds: RecordOperation then stores InputHash keyed by the
	// subject's data key (HMAC-SHA256, "k1:" and hex), so that Forget
	// destroys what could confirm a guess of the erased input. Compare a
	// stored operation with SameInput. Not stored.
	ErasureKey string
}

// keyedInputPrefix starts an input hash keyed by a subject's data key.
const keyedInputPrefix = "k1:"

// keyInput returns op with its InputHash keyed by the data key of its
// ErasureKey, read on q. A forgotten subject is an
// *envelope.InvalidError on erasurekey: nothing can be compared with,
// or recorded under, a destroyed key. ok is false (op unchanged) when
// the subject has no key yet.
func (s *Store) keyInput(ctx context.Context, q driver.ReadQuerier, op Operation) (Operation, bool, error) {
	if op.ErasureKey == "" || strings.HasPrefix(op.InputHash, keyedInputPrefix) {
		return op, true, nil
	}
	if s.keys.master == nil {
		return op, false, fmt.Errorf("operation %q carries %s %q: %w: open the store with a master key", op.ID, ExtErasureKey, op.ErasureKey, ErrNoMasterKey)
	}
	d, err := s.keys.lookup(ctx, q, keyRef{op.Tenant, op.ErasureKey}, false)
	switch {
	case err != nil:
		return op, false, err
	case d == nil:
		return op, false, nil
	case d.forgotten:
		return op, false, &envelope.InvalidError{Index: -1, Field: ExtErasureKey, Reason: fmt.Sprintf("subject %q (tenant %s) was forgotten: operation %q cannot be compared with or recorded under its destroyed key", op.ErasureKey, op.Tenant, op.ID)}
	}
	m := hmac.New(sha256.New, d.inputKey)
	m.Write([]byte(op.InputHash))
	op.InputHash = keyedInputPrefix + hex.EncodeToString(m.Sum(nil))
	return op, true, nil
}

// SameInput reports whether given (its InputHash as the caller computed
// it, its ErasureKey set as when recorded) is the operation stored:
// the same type and input. An input keyed by a forgotten subject's key
// cannot be compared: that is an *envelope.InvalidError on erasurekey
// (a retry of the operation after a forget is refused, as an append
// under the subject is).
func (a *Aggregates) SameInput(ctx context.Context, stored, given Operation) (bool, error) {
	if err := a.s.rdb.check(); err != nil {
		return false, err
	}
	if strings.HasPrefix(stored.InputHash, keyedInputPrefix) && given.ErasureKey != "" {
		var err error
		if given, _, err = a.s.keyInput(ctx, a.s.rdb, given); err != nil {
			return false, err
		}
	}
	return stored.InputHash == given.InputHash && stored.Type == given.Type, nil
}

// KeyInput returns op's InputHash keyed, in turn, by the data key of
// each subject (in the order given; the caller sorts them), inside the
// write transaction: what serve stores as the fingerprint of an HTTP
// append whose events carry erasurekey, so that forgetting any of the
// subjects destroys what could confirm a guess of the request. A
// forgotten subject is an *envelope.InvalidError on erasurekey (a retry
// after a forget is refused, as an append under the subject is); a
// subject without a key yet leaves the hash as it is (ok false).
func (tx txBook) KeyInput(ctx context.Context, op Operation, subjects []string) (hash string, ok bool, err error) {
	if err := tx.check(); err != nil {
		return "", false, err
	}
	ok = true
	for _, subj := range subjects {
		in := op
		in.ErasureKey = subj
		in.InputHash = strings.TrimPrefix(op.InputHash, keyedInputPrefix)
		keyed, found, err := tx.s.keyInput(ctx, tx.Tx, in)
		if err != nil {
			return "", false, err
		}
		if !found {
			ok = false
			continue
		}
		op.InputHash = keyed.InputHash
	}
	return op.InputHash, ok, nil
}

// MaxOperationIDBytes is the longest operation id.
const MaxOperationIDBytes = 255

func validateOperation(tenant, id string) error {
	if err := envelope.ValidateTenant(tenant); err != nil {
		return err
	}
	if id == "" || len(id) > MaxOperationIDBytes {
		return &envelope.InvalidError{Index: -1, Field: "operation_id", Reason: fmt.Sprintf("must be 1-%d bytes", MaxOperationIDBytes)}
	}
	return nil
}

// operationOf is the operation a ledger row holds.
func operationOf(r driver.OperationRow, ok bool, err error) (Operation, bool, error) {
	if err != nil || !ok {
		return Operation{}, false, mapErr(err)
	}
	return Operation{Tenant: r.Tenant, ID: r.ID, Type: r.Type, InputHash: r.InputHash, Result: r.Result,
		CreatedAt: time.Unix(0, r.CreatedAt).UTC()}, true, nil
}

// Operation reads a ledger row from the read pool. It may be stale by the
// time the caller acts: decide inside Update with Bookkeeping's Operation.
func (a *Aggregates) Operation(ctx context.Context, tenant, id string) (Operation, bool, error) {
	s := a.s
	if err := validateOperation(tenant, id); err != nil {
		return Operation{}, false, err
	}
	return operationOf(s.ex.Operation(ctx, s.rdb, tenant, id))
}

// Operation reads a ledger row inside an Update closure. The writer
// holds the write lock, so the answer holds until the closure returns.
func (tx txBook) Operation(ctx context.Context, tenant, id string) (Operation, bool, error) {
	if err := tx.check(); err != nil {
		return Operation{}, false, err
	}
	s := tx.s
	if err := validateOperation(tenant, id); err != nil {
		return Operation{}, false, err
	}
	return operationOf(s.ex.Operation(ctx, s.wconn, tenant, id))
}

// RecordOperation writes a ledger row inside an Update closure, in the
// transaction of the operation's own writes. An existing row for the same
// tenant and id returns the stored one: same input hash gives
// (stored, nil), a different one an *IdempotencyMismatchError. Keys never
// cross tenants.
func (tx txBook) RecordOperation(ctx context.Context, op Operation) (Operation, error) {
	if err := tx.check(); err != nil {
		return Operation{}, err
	}
	s := tx.s
	if err := validateOperation(op.Tenant, op.ID); err != nil {
		return Operation{}, err
	}
	if op.Result == nil {
		op.Result = []byte("null")
	}
	op.CreatedAt = time.Unix(0, tx.now).UTC()
	var err error
	if op, _, err = s.keyInput(ctx, tx.Tx, op); err != nil {
		return Operation{}, fmt.Errorf("record operation %q: %w", op.ID, err)
	}
	row, found, err := s.ex.RecordOperation(ctx, s.wconn, driver.OperationRow{Tenant: op.Tenant, ID: op.ID, Type: op.Type,
		InputHash: op.InputHash, Result: op.Result, CreatedAt: tx.now})
	if err != nil {
		return Operation{}, fmt.Errorf("record operation %q: %w", op.ID, mapErr(err))
	}
	if found {
		stored, _, _ := operationOf(row, true, nil)
		if stored.InputHash != op.InputHash || stored.Type != op.Type {
			return stored, &IdempotencyMismatchError{Tenant: op.Tenant, OperationID: op.ID, StoredType: stored.Type, GivenType: op.Type}
		}
		return stored, nil
	}
	return op, nil
}
