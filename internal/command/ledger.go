package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// Ledger is the operation ledger as a handler uses it: an idempotent
// command's first result is recorded in the transaction of its events
// and a retry answered from it.
type Ledger struct {
	Store *store.Store
}

// Operation is the ledger entry of a command: type opType, the input
// hash of stream and payload. It is nil when the command has no
// operation id (it is then not idempotent).
func Operation(tenant, operationID, opType, stream string, payload any, erasureKey string) (*store.Operation, error) {
	if operationID == "" {
		return nil, nil
	}
	hash, err := InputHash(stream, payload)
	if err != nil {
		return nil, err
	}
	return &store.Operation{Tenant: tenant, ID: operationID, Type: opType, InputHash: hash, ErasureKey: erasureKey}, nil
}

// OpType is the operation type of a command of Go type t by handler
// name: "<name>.<type name>".
func OpType(name string, t reflect.Type) string { return name + "." + TypeName(t) }

// Lookup returns op's stored entry, if the operation was carried out.
// A nil op was not.
func (l Ledger) Lookup(ctx context.Context, op *store.Operation) (store.Operation, bool, error) {
	if op == nil {
		return store.Operation{}, false, nil
	}
	return l.Store.Aggregates().Operation(ctx, op.Tenant, op.ID)
}

// errAnswered ends an Update whose operation turned out to be done.
var errAnswered = errors.New("operation already answered")

// Commit runs write in one Update. With op set, the transaction first
// looks op up (a concurrent first execution may have committed since
// the caller looked) and, when write succeeded, records op with result's
// JSON. answered is the stored entry when op had been carried out: then
// write did not run and nothing was written.
func (l Ledger) Commit(ctx context.Context, op *store.Operation, write func(tx *store.Tx) error, result func() any) (answered *store.Operation, err error) {
	var stored store.Operation
	err = l.Store.Update(ctx, func(tx *store.Tx) error {
		if op != nil {
			got, ok, err := store.Bookkeeping(inside.Key{}, tx).Operation(ctx, op.Tenant, op.ID)
			if err != nil {
				return err
			}
			if ok {
				stored = got
				return errAnswered
			}
		}
		if err := write(tx); err != nil {
			return err
		}
		if op != nil {
			rec := *op
			rec.Result, _ = json.Marshal(result())
			if _, err := store.Bookkeeping(inside.Key{}, tx).RecordOperation(ctx, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errAnswered) {
		return &stored, nil
	}
	return nil, err
}

// Replay answers a repeated operation, given, from its stored entry:
// the first result, decoded into into, when the inputs are the same;
// else a *store.IdempotencyMismatchError naming both types, and both
// streams when stream is set (storedStream, called once the result is
// decoded, names the first execution's; "" when unknown). An input hash
// keyed by the subject's data key (ErasureKey) is compared by the store;
// after a forget it cannot be, and the retry is refused (an
// *envelope.InvalidError on erasurekey).
func (l Ledger) Replay(ctx context.Context, stored, given store.Operation, into any, stream string, storedStream func() string) error {
	rerr := json.Unmarshal(stored.Result, into)
	same, err := l.Store.Aggregates().SameInput(ctx, stored, given)
	if err != nil {
		return err
	}
	if !same {
		mismatch := &store.IdempotencyMismatchError{Tenant: given.Tenant, OperationID: given.ID, StoredType: stored.Type, GivenType: given.Type}
		if stream != "" {
			s := ""
			if rerr == nil {
				s = storedStream()
			}
			if s == "" {
				s = stream // unknown: not named as differing
			}
			mismatch.StoredStream, mismatch.GivenStream = s, stream
		}
		return mismatch
	}
	if rerr != nil {
		return fmt.Errorf("operation %q: stored result does not decode: %w", given.ID, rerr)
	}
	return nil
}
