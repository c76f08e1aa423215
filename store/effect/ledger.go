// Package effect is the effect ledger: side effects on outside systems (a
// payment, an e-mail, a permission grant) run at most once per tenant and
// key, an unknown outcome never guessed at, and a person's approval of an
// effect's exact arguments. A service reaches the ledger of its store
// with For:
//
//	ledger := effect.For(s)
//	e, err := ledger.Do(ctx, effect.Intent{Tenant: "default", Key: "refund:o-1", Args: refund}, call)
//
// Do, Run and ResumeApproved run effects; Get and List read them;
// Reconcile asks the provider about those whose outcome is unknown;
// Compensate records one undone; Approve and Reject are a person's
// decisions. docs/effects.md is the guide.
package effect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Ledger is a store's effect ledger, reached with For: one row per side
// effect on an outside system, keyed by tenant and key, moving reserved
// (or awaiting a person's approval, then approved or rejected), started,
// then completed, failed, unknown or compensated.
type Ledger struct{ s *store.Store }

// For returns the effect ledger of s.
func For(s *store.Store) *Ledger { return &Ledger{s: s} }

// State is where an effect stands in the ledger.
type State string

// Effect states.
const (
	Reserved    State = "RESERVED"    // recorded, not started
	Executing   State = "EXECUTING"   // the external call is under way
	Completed   State = "COMPLETED"   // it happened; ProviderRef says where
	Failed      State = "FAILED"      // it did not happen: may be retried with the same key
	Unknown     State = "UNKNOWN"     // it may have happened (a timeout after sending): reconcile first
	Compensated State = "COMPENSATED" // it happened and was undone

	AwaitingApproval State = "AWAITING_APPROVAL" // waits for a person to approve its exact arguments
	Approved         State = "APPROVED"          // approved, not yet run: the next Do or ResumeApproved runs it
	Rejected         State = "REJECTED"          // a person said no: final
)

// States lists every state, in the order of a run.
var States = []State{AwaitingApproval, Approved, Rejected, Reserved, Executing,
	Completed, Failed, Unknown, Compensated}

// ErrState: the effect is not in a state that allows the step (for
// example a decision on an effect that awaits none, or a run of an
// UNKNOWN effect, which must be reconciled first).
var ErrState = errors.New("effect is not in a state that allows this step")

// ErrOutcomeUnknown, returned (wrapped) by the call given to Ledger.Run,
// says the external call may have happened: a timeout after the request
// was sent, a dropped connection. The effect becomes UNKNOWN and is never
// retried blindly.
var ErrOutcomeUnknown = errors.New("outcome of the external call is unknown")

// StateError names the effect, its state and the refused step.
type StateError struct {
	Tenant, Key string
	State       State
	Step        string
}

func (e *StateError) Error() string {
	hint := ""
	if e.State == Unknown {
		hint = ": reconcile it first (eventlite doctor lists it); only a confirmed 'did not happen' allows a retry"
	}
	return fmt.Sprintf("effect %q (tenant %s) is %s; cannot %s%s", e.Key, e.Tenant, e.State, e.Step, hint)
}

// Unwrap lets errors.Is(err, ErrState) match.
func (e *StateError) Unwrap() error { return ErrState }

// Effect is one row of the effect ledger.
type Effect struct {
	Tenant      string
	Key         string
	State       State
	ProviderRef string
	Attempts    int
	LastError   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	StartedAt   time.Time // zero unless an attempt began

	// Fixed by the effect's first run (Ledger.Do; Run and Reserve record
	// an external effect without arguments).
	Kind     Kind
	Resource string
	Summary  string
	Args     json.RawMessage // RFC 8785 canonical JSON; nil: no arguments
	// ErasureKey names the subject whose data the arguments hold
	// (Intent.ErasureKey): Args and LastError are stored encrypted
	// with its data key.
	ErasureKey string
	// ArgsErased: the subject was forgotten; Args and LastError are gone
	// (nil and "") for good.
	ArgsErased bool
	// ArgsEncrypted: read without the master key; Args and LastError are
	// not shown.
	ArgsEncrypted bool
	NeedsApproval bool
	// ApprovalValidFor: an approval older than this no longer counts
	// (0: forever).
	ApprovalValidFor time.Duration
	RequestedBy      string

	// The pending request for approval, and the decision on it. Names are
	// declared by the application or operator, not authenticated.
	RequestedAt time.Time // zero: no request pending or decided
	DecidedBy   string
	DecidedAt   time.Time // zero: no decision
	Reason      string    // why it was rejected
}

// ArgsHash is the SHA-256, in 64 lowercase hex digits, of the effect's
// arguments as 'eventlite effects list' prints them: the canonical bytes,
// or null when there are none. An approval names it.
func (e Effect) ArgsHash() string {
	sum := sha256.Sum256(e.ArgsText())
	return hex.EncodeToString(sum[:])
}

// ArgsText is the effect's arguments as printed: the canonical JSON, or
// null when there are none.
func (e Effect) ArgsText() []byte {
	if len(e.Args) == 0 {
		return []byte("null")
	}
	return e.Args
}

// effectOf is the effect a ledger row holds.
func effectOf(r driver.EffectRow) Effect {
	e := Effect{Tenant: r.Tenant, Key: r.Key, State: State(r.State), ProviderRef: r.ProviderRef, Attempts: r.Attempts,
		LastError: r.LastError, CreatedAt: time.Unix(0, r.CreatedAt).UTC(), UpdatedAt: time.Unix(0, r.UpdatedAt).UTC(),
		StartedAt: unixOrZero(r.StartedAt), Kind: Kind(r.Kind), Resource: r.Resource, Summary: r.Summary,
		NeedsApproval: r.NeedsApproval, ApprovalValidFor: time.Duration(r.ApprovalValidFor), RequestedBy: r.RequestedBy,
		RequestedAt: unixOrZero(r.RequestedAt), DecidedBy: r.DecidedBy, DecidedAt: unixOrZero(r.DecidedAt), Reason: r.Reason}
	if r.Args != "" {
		e.Args = json.RawMessage(r.Args)
	}
	return e
}

// effectRow is the ledger row of e, its arguments and error text in
// clear.
func effectRow(e Effect) driver.EffectRow {
	return driver.EffectRow{Tenant: e.Tenant, Key: e.Key, State: string(e.State), ProviderRef: e.ProviderRef, Attempts: e.Attempts,
		LastError: e.LastError, CreatedAt: e.CreatedAt.UnixNano(), UpdatedAt: e.UpdatedAt.UnixNano(), StartedAt: nsOrZero(e.StartedAt),
		Kind: string(e.Kind), Resource: e.Resource, Summary: e.Summary, Args: string(e.Args), NeedsApproval: e.NeedsApproval,
		ApprovalValidFor: int64(e.ApprovalValidFor), RequestedBy: e.RequestedBy, RequestedAt: nsOrZero(e.RequestedAt),
		DecidedBy: e.DecidedBy, DecidedAt: nsOrZero(e.DecidedAt), Reason: e.Reason}
}

// open is the effect row r holds, its sealed arguments and error text
// opened with its subject's key read in tx (nil: outside a
// transaction): gone (ArgsErased) once the subject is forgotten, hidden
// (ArgsEncrypted) without the master key.
func (l *Ledger) open(ctx context.Context, tx *store.Tx, r driver.EffectRow) (Effect, error) {
	o, err := store.Inner(inside.Key{}, l.s).OpenEffect(ctx, tx, r)
	if err != nil {
		return Effect{}, err
	}
	e := effectOf(o.Row)
	e.ErasureKey, e.ArgsErased, e.ArgsEncrypted = o.Subject, o.Erased, o.Encrypted
	return e, nil
}

// seal is the ledger row to write in tx for e, its arguments and error
// text sealed with the key of e.ErasureKey (created on first use when
// create is set); old is the row as stored, nil for a new one.
func (l *Ledger) seal(ctx context.Context, tx *store.Tx, e Effect, old *driver.EffectRow, create bool) (driver.EffectRow, error) {
	return store.Inner(inside.Key{}, l.s).SealEffect(ctx, tx, effectRow(e), e.ErasureKey, old, create)
}

func unixOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

func nsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func validateEffect(tenant, key string) error {
	if err := envelope.ValidateTenant(tenant); err != nil {
		return err
	}
	if key == "" || len(key) > 255 {
		return &envelope.InvalidError{Index: -1, Field: "effect_key", Reason: "must be 1-255 bytes"}
	}
	return nil
}

// Get reads one effect.
func (l *Ledger) Get(ctx context.Context, tenant, key string) (Effect, bool, error) {
	if err := validateEffect(tenant, key); err != nil {
		return Effect{}, false, err
	}
	r, ok, err := store.Inner(inside.Key{}, l.s).EffectRow(ctx, tenant, key)
	if err != nil || !ok {
		return Effect{}, false, err
	}
	e, err := l.open(ctx, nil, r)
	return e, err == nil, err
}

// transition moves an effect from one of the allowed states to next; set
// may change more (the state included) or refuse the step. now is the
// transaction's time, unix nanoseconds.
func (l *Ledger) transition(ctx context.Context, tenant, key, step string, from []State, next State, set func(now int64, prev State, e *Effect) error) (Effect, error) {
	if err := validateEffect(tenant, key); err != nil {
		return Effect{}, err
	}
	in := store.Inner(inside.Key{}, l.s)
	var e Effect
	err := l.s.Update(ctx, func(tx *store.Tx) error {
		now := in.Now(tx)
		_, found, err := in.UpdateEffect(ctx, tx, tenant, key, func(r *driver.EffectRow) (bool, error) {
			cur, err := l.open(ctx, tx, *r)
			if err != nil {
				return false, err
			}
			if !slices.Contains(from, cur.State) {
				return false, &StateError{Tenant: tenant, Key: key, State: cur.State, Step: step}
			}
			prev := cur.State
			cur.State = next
			cur.UpdatedAt = time.Unix(0, now).UTC()
			if set != nil {
				if err := set(now, prev, &cur); err != nil {
					return false, err
				}
			}
			row, err := l.seal(ctx, tx, cur, r, false)
			if err != nil {
				return false, err
			}
			e, *r = cur, row
			return true, nil
		})
		if err != nil {
			return err
		}
		if !found {
			return &NotFoundError{Tenant: tenant, Key: key}
		}
		return nil
	})
	if err != nil {
		return Effect{}, err
	}
	return e, nil
}

// Compensate records that a completed effect was undone.
func (l *Ledger) Compensate(ctx context.Context, tenant, key string) (Effect, error) {
	return l.transition(ctx, tenant, key, "compensate", []State{Completed}, Compensated, nil)
}

// Run performs an external call at most once per tenant and key: it is
// Do with an external effect without arguments or approval. It reserves
// the effect (a completed one is returned as is, without a call), begins
// an attempt, runs call, and records the outcome: COMPLETED with the
// provider reference, UNKNOWN when call's error wraps ErrOutcomeUnknown,
// FAILED otherwise. An UNKNOWN or EXECUTING effect is refused with a
// *StateError: it may have happened, so it is reconciled, never retried
// blindly. A key first run by Do with another kind, a resource, arguments
// or an approval is refused with a *MismatchError.
func (l *Ledger) Run(ctx context.Context, tenant, key string, call func(ctx context.Context) (providerRef string, err error)) (Effect, error) {
	return l.Do(ctx, Intent{Tenant: tenant, Key: key}, func(ctx context.Context, _ json.RawMessage) (string, error) { return call(ctx) })
}

// Happened is a checker's answer about an effect whose outcome was unknown.
type Happened int

const (
	// NotSure: the provider cannot tell yet; the effect stays UNKNOWN.
	NotSure Happened = iota
	// DidHappen: the provider has it; the effect becomes COMPLETED.
	DidHappen
	// DidNotHappen: confirmed absent; the effect becomes FAILED and may be
	// retried with the same key.
	DidNotHappen
)

// Checker asks the provider whether an effect happened, by effect
// key or provider reference, and returns the reference when it did.
type Checker func(ctx context.Context, e Effect) (Happened, string, error)

// ReconcileResult counts what Ledger.Reconcile decided.
type ReconcileResult struct {
	Checked, Completed, Failed, StillUnknown int
}

// Reconcile asks check about every UNKNOWN effect, and EXECUTING
// ones that started before stuckBefore (a worker died mid-call), and
// records each answer.
func (l *Ledger) Reconcile(ctx context.Context, stuckBefore time.Time, check Checker) (ReconcileResult, error) {
	var res ReconcileResult
	effects, err := l.List(ctx, Filter{States: []State{Unknown, Executing}})
	if err != nil {
		return res, err
	}
	for _, e := range effects {
		if e.State == Executing {
			if e.StartedAt.After(stuckBefore) {
				continue
			}
			// A stuck attempt may have happened: it is unknown until checked.
			if _, err := l.steps().MarkUnknown(ctx, e.Tenant, e.Key, "attempt started "+e.StartedAt.Format(time.RFC3339)+" never finished"); err != nil {
				return res, err
			}
		}
		res.Checked++
		answer, ref, err := check(ctx, e)
		if err != nil {
			return res, fmt.Errorf("check effect %q: %w", e.Key, err)
		}
		switch answer {
		case DidHappen:
			if _, err := l.steps().Complete(ctx, e.Tenant, e.Key, ref); err != nil {
				return res, err
			}
			res.Completed++
		case DidNotHappen:
			if _, err := l.steps().Fail(ctx, e.Tenant, e.Key, "reconciled: the provider confirms it did not happen"); err != nil {
				return res, err
			}
			res.Failed++
		default:
			res.StillUnknown++
		}
	}
	return res, nil
}

// Filter selects effects.
type Filter struct {
	Tenant string  // "" for every tenant
	States []State // none for every state
}

// List lists effects, oldest update first.
func (l *Ledger) List(ctx context.Context, f Filter) ([]Effect, error) {
	if f.Tenant != "" {
		if err := envelope.ValidateTenant(f.Tenant); err != nil {
			return nil, err
		}
	}
	states := make([]string, len(f.States))
	for i, st := range f.States {
		states[i] = string(st)
	}
	rows, err := store.Inner(inside.Key{}, l.s).EffectRows(ctx, f.Tenant, states)
	if err != nil {
		return nil, err
	}
	var out []Effect
	for _, r := range rows {
		e, err := l.open(ctx, nil, r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
