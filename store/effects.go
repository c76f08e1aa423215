package store

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
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Effects is the store's effect ledger, reached with Store.Effects: one
// row per side effect on an outside system, keyed by tenant and key,
// moving reserved (or awaiting a person's approval, then approved or
// rejected), started, then completed, failed, unknown or compensated.
type Effects struct{ s *Store }

// Effects returns the store's effect ledger.
func (s *Store) Effects() *Effects { return &Effects{s: s} }

// EffectState is where an effect stands in the ledger.
type EffectState string

// Effect states.
const (
	EffectReserved    EffectState = "RESERVED"    // recorded, not started
	EffectExecuting   EffectState = "EXECUTING"   // the external call is under way
	EffectCompleted   EffectState = "COMPLETED"   // it happened; ProviderRef says where
	EffectFailed      EffectState = "FAILED"      // it did not happen: may be retried with the same key
	EffectUnknown     EffectState = "UNKNOWN"     // it may have happened (a timeout after sending): reconcile first
	EffectCompensated EffectState = "COMPENSATED" // it happened and was undone

	EffectAwaitingApproval EffectState = "AWAITING_APPROVAL" // waits for a person to approve its exact arguments
	EffectApproved         EffectState = "APPROVED"          // approved, not yet run: the next Do or ResumeApproved runs it
	EffectRejected         EffectState = "REJECTED"          // a person said no: final
)

// EffectStates lists every state, in the order of a run.
var EffectStates = []EffectState{EffectAwaitingApproval, EffectApproved, EffectRejected, EffectReserved, EffectExecuting,
	EffectCompleted, EffectFailed, EffectUnknown, EffectCompensated}

// ErrEffectState: the effect is not in a state that allows the step (for
// example Begin on an UNKNOWN effect, which must be reconciled first).
var ErrEffectState = errors.New("effect is not in a state that allows this step")

// ErrOutcomeUnknown, returned (wrapped) by the call given to Effects.Run,
// says the external call may have happened: a timeout after the request
// was sent, a dropped connection. The effect becomes UNKNOWN and is never
// retried blindly.
var ErrOutcomeUnknown = errors.New("outcome of the external call is unknown")

// EffectStateError names the effect, its state and the refused step.
type EffectStateError struct {
	Tenant, Key string
	State       EffectState
	Step        string
}

func (e *EffectStateError) Error() string {
	hint := ""
	if e.State == EffectUnknown {
		hint = ": reconcile it first (eventlite doctor lists it); only a confirmed 'did not happen' allows a retry"
	}
	return fmt.Sprintf("effect %q (tenant %s) is %s; cannot %s%s", e.Key, e.Tenant, e.State, e.Step, hint)
}

// Unwrap lets errors.Is(err, ErrEffectState) match.
func (e *EffectStateError) Unwrap() error { return ErrEffectState }

// Effect is one row of the effect ledger.
type Effect struct {
	Tenant      string
	Key         string
	State       EffectState
	ProviderRef string
	Attempts    int
	LastError   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	StartedAt   time.Time // zero unless an attempt began

	// Fixed by the effect's first run (Effects.Do; Run and Reserve record
	// an external effect without arguments).
	Kind     EffectKind
	Resource string
	Summary  string
	Args     json.RawMessage // RFC 8785 canonical JSON; nil: no arguments
	// ErasureKey names the subject whose data the arguments hold
	// (EffectRun.ErasureKey): Args and LastError are stored encrypted
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
	e := Effect{Tenant: r.Tenant, Key: r.Key, State: EffectState(r.State), ProviderRef: r.ProviderRef, Attempts: r.Attempts,
		LastError: r.LastError, CreatedAt: time.Unix(0, r.CreatedAt).UTC(), UpdatedAt: time.Unix(0, r.UpdatedAt).UTC(),
		StartedAt: unixOrZero(r.StartedAt), Kind: EffectKind(r.Kind), Resource: r.Resource, Summary: r.Summary,
		NeedsApproval: r.NeedsApproval, ApprovalValidFor: time.Duration(r.ApprovalValidFor), RequestedBy: r.RequestedBy,
		RequestedAt: unixOrZero(r.RequestedAt), DecidedBy: r.DecidedBy, DecidedAt: unixOrZero(r.DecidedAt), Reason: r.Reason}
	if r.Args != "" {
		e.Args = json.RawMessage(r.Args)
	}
	return e
}

// effectRow is the ledger row of e.
func effectRow(e Effect) driver.EffectRow {
	return driver.EffectRow{Tenant: e.Tenant, Key: e.Key, State: string(e.State), ProviderRef: e.ProviderRef, Attempts: e.Attempts,
		LastError: e.LastError, CreatedAt: e.CreatedAt.UnixNano(), UpdatedAt: e.UpdatedAt.UnixNano(), StartedAt: nsOrZero(e.StartedAt),
		Kind: string(e.Kind), Resource: e.Resource, Summary: e.Summary, Args: string(e.Args), NeedsApproval: e.NeedsApproval,
		ApprovalValidFor: int64(e.ApprovalValidFor), RequestedBy: e.RequestedBy, RequestedAt: nsOrZero(e.RequestedAt),
		DecidedBy: e.DecidedBy, DecidedAt: nsOrZero(e.DecidedAt), Reason: e.Reason}
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
func (ef *Effects) Get(ctx context.Context, tenant, key string) (Effect, bool, error) {
	s := ef.s
	if err := validateEffect(tenant, key); err != nil {
		return Effect{}, false, err
	}
	r, ok, err := s.ex.Effect(ctx, s.rdb, tenant, key)
	if err != nil || !ok {
		return Effect{}, false, mapErr(err)
	}
	e, err := s.openEffectRow(ctx, s.rdb, r)
	return e, err == nil, err
}

// Reserve records the intent to perform an effect. A second reserve
// of the same tenant and key returns the existing row (created false): no
// second effect.
func (ef effectSteps) Reserve(ctx context.Context, tenant, key string) (Effect, bool, error) {
	s := ef.s
	if err := validateEffect(tenant, key); err != nil {
		return Effect{}, false, err
	}
	var e Effect
	var created bool
	err := s.Update(ctx, func(tx *Tx) error {
		// An external effect without arguments: the columns' defaults.
		r, c, err := s.ex.ReserveEffect(ctx, s.wconn, driver.EffectRow{Tenant: tenant, Key: key, State: string(EffectReserved),
			CreatedAt: tx.now, UpdatedAt: tx.now, Kind: string(EffectExternal)}, nil)
		if err != nil {
			return mapErr(err)
		}
		created = c
		e, err = s.openEffectRow(ctx, tx, r)
		return err
	})
	if err != nil {
		return Effect{}, false, fmt.Errorf("reserve effect %q: %w", key, err)
	}
	return e, created, nil
}

// transition moves an effect from one of the allowed states to next; set
// may change more (the state included) or refuse the step.
func (s *Store) transition(ctx context.Context, tenant, key, step string, from []EffectState, next EffectState, set func(tx *Tx, prev EffectState, e *Effect) error) (Effect, error) {
	if err := validateEffect(tenant, key); err != nil {
		return Effect{}, err
	}
	var e Effect
	err := s.Update(ctx, func(tx *Tx) error {
		_, found, err := s.ex.UpdateEffect(ctx, s.wconn, tenant, key, func(r *driver.EffectRow) (bool, error) {
			cur, err := s.openEffectRow(ctx, tx, *r)
			if err != nil {
				return false, err
			}
			if !slices.Contains(from, cur.State) {
				return false, &EffectStateError{Tenant: tenant, Key: key, State: cur.State, Step: step}
			}
			prev := cur.State
			cur.State = next
			cur.UpdatedAt = time.Unix(0, tx.now).UTC()
			if set != nil {
				if err := set(tx, prev, &cur); err != nil {
					return false, err
				}
			}
			row, err := s.sealEffectRow(ctx, tx, cur, r, false)
			if err != nil {
				return false, err
			}
			e, *r = cur, row
			return true, nil
		})
		if err != nil {
			return mapErr(err)
		}
		if !found {
			return &EffectNotFoundError{Tenant: tenant, Key: key}
		}
		return nil
	})
	if err != nil {
		return Effect{}, err
	}
	return e, nil
}

// Begin marks the start of an attempt (RESERVED, FAILED or APPROVED ->
// EXECUTING). UNKNOWN is refused (reconcile it first) except for the
// kinds that may run again without reconciling (derived, analytics); an
// approval older than the effect's ApprovalValidFor is refused. Begin does
// not run a permission effect's Check: Do does.
func (ef effectSteps) Begin(ctx context.Context, tenant, key string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "begin", []EffectState{EffectReserved, EffectFailed, EffectApproved, EffectUnknown}, EffectExecuting,
		func(tx *Tx, prev EffectState, e *Effect) error {
			if prev == EffectUnknown && !e.Kind.rerunsUnknown() {
				return &EffectStateError{Tenant: tenant, Key: key, State: prev, Step: "begin"}
			}
			if e.NeedsApproval && approvalExpired(*e, tx.now) {
				return &EffectStateError{Tenant: tenant, Key: key, State: prev, Step: "begin: its approval is older than " + e.ApprovalValidFor.String() + " (Do asks for a new one)"}
			}
			e.Attempts++
			e.StartedAt = time.Unix(0, tx.now).UTC()
			return nil
		})
}

// Complete records that the effect happened, with the provider's
// reference (EXECUTING or UNKNOWN -> COMPLETED).
func (ef effectSteps) Complete(ctx context.Context, tenant, key, providerRef string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "complete", []EffectState{EffectExecuting, EffectUnknown}, EffectCompleted, func(tx *Tx, _ EffectState, e *Effect) error {
		e.ProviderRef = providerRef
		return nil
	})
}

// Fail records that the attempt certainly did not happen
// (EXECUTING or UNKNOWN -> FAILED); a retry with the same key may follow.
// An irreversible effect goes back to AWAITING_APPROVAL instead, its
// approval cleared: only a person's new approval lets it run again.
func (ef effectSteps) Fail(ctx context.Context, tenant, key, reason string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "fail", []EffectState{EffectExecuting, EffectUnknown}, EffectFailed, func(tx *Tx, _ EffectState, e *Effect) error {
		e.LastError = reason
		if e.Kind == EffectIrreversible {
			askAgain(e, tx.now)
		}
		return nil
	})
}

// MarkUnknown records that the attempt may have happened
// (EXECUTING -> UNKNOWN). It is not retried until reconciled.
func (ef effectSteps) MarkUnknown(ctx context.Context, tenant, key, reason string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "mark unknown", []EffectState{EffectExecuting}, EffectUnknown, func(tx *Tx, _ EffectState, e *Effect) error {
		e.LastError = reason
		return nil
	})
}

// Compensate records that a completed effect was undone.
func (ef *Effects) Compensate(ctx context.Context, tenant, key string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "compensate", []EffectState{EffectCompleted}, EffectCompensated, nil)
}

// Run performs an external call at most once per tenant and key: it is
// Do with an external effect without arguments or approval. It reserves
// the effect (a completed one is returned as is, without a call), begins
// an attempt, runs call, and records the outcome: COMPLETED with the
// provider reference, UNKNOWN when call's error wraps ErrOutcomeUnknown,
// FAILED otherwise. An UNKNOWN or EXECUTING effect is refused with an
// *EffectStateError: it may have happened, so it is reconciled, never
// retried blindly. A key first run by Do with another kind, a resource,
// arguments or an approval is refused with an *EffectMismatchError.
func (ef *Effects) Run(ctx context.Context, tenant, key string, call func(ctx context.Context) (providerRef string, err error)) (Effect, error) {
	return ef.Do(ctx, EffectRun{Tenant: tenant, Key: key}, func(ctx context.Context, _ json.RawMessage) (string, error) { return call(ctx) })
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

// EffectChecker asks the provider whether an effect happened, by effect
// key or provider reference, and returns the reference when it did.
type EffectChecker func(ctx context.Context, e Effect) (Happened, string, error)

// ReconcileResult counts what Effects.Reconcile decided.
type ReconcileResult struct {
	Checked, Completed, Failed, StillUnknown int
}

// Reconcile asks check about every UNKNOWN effect, and EXECUTING
// ones that started before stuckBefore (a worker died mid-call), and
// records each answer.
func (ef *Effects) Reconcile(ctx context.Context, stuckBefore time.Time, check EffectChecker) (ReconcileResult, error) {
	s := ef.s
	var res ReconcileResult
	effects, err := s.Effects().List(ctx, EffectFilter{States: []EffectState{EffectUnknown, EffectExecuting}})
	if err != nil {
		return res, err
	}
	for _, e := range effects {
		if e.State == EffectExecuting {
			if e.StartedAt.After(stuckBefore) {
				continue
			}
			// A stuck attempt may have happened: it is unknown until checked.
			if _, err := s.Effects().steps().MarkUnknown(ctx, e.Tenant, e.Key, "attempt started "+e.StartedAt.Format(time.RFC3339)+" never finished"); err != nil {
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
			if _, err := s.Effects().steps().Complete(ctx, e.Tenant, e.Key, ref); err != nil {
				return res, err
			}
			res.Completed++
		case DidNotHappen:
			if _, err := s.Effects().steps().Fail(ctx, e.Tenant, e.Key, "reconciled: the provider confirms it did not happen"); err != nil {
				return res, err
			}
			res.Failed++
		default:
			res.StillUnknown++
		}
	}
	return res, nil
}

// EffectFilter selects effects.
type EffectFilter struct {
	Tenant string        // "" for every tenant
	States []EffectState // none for every state
}

// List lists effects, oldest update first.
func (ef *Effects) List(ctx context.Context, f EffectFilter) ([]Effect, error) {
	s := ef.s
	if f.Tenant != "" {
		if err := envelope.ValidateTenant(f.Tenant); err != nil {
			return nil, err
		}
	}
	states := make([]string, len(f.States))
	for i, st := range f.States {
		states[i] = string(st)
	}
	rows, err := s.ex.ListEffects(ctx, s.rdb, f.Tenant, states)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []Effect
	for _, r := range rows {
		e, err := s.openEffectRow(ctx, s.rdb, r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
