package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/jcs"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Kind says what may run again, and when.
type Kind string

// Effect kinds. No kind ever runs a COMPLETED effect again, and replay
// never runs effects.
const (
	// Derived: a derived index or cache; FAILED and UNKNOWN run again
	// without reconciling (recomputing it is harmless).
	Derived Kind = "derived"
	// Analytics: an analytics event; FAILED and UNKNOWN run again
	// without reconciling, and the call passes the effect's key to its
	// sink as the dedupe id, so a repeat is counted once.
	Analytics Kind = "analytics"
	// External: a call to an outside system (an email, a charge);
	// FAILED runs again with the stored arguments, UNKNOWN only after
	// reconciliation says it did not happen. The default.
	External Kind = "external"
	// Permission: as external, and Intent.Check runs before every
	// attempt; when it fails nothing runs (*PermissionError).
	Permission Kind = "permission"
	// Irreversible: needs a person's approval; a failed attempt, or
	// reconciliation's "did not happen", sends it back to
	// AWAITING_APPROVAL with the old approval cleared.
	Irreversible Kind = "irreversible"
)

// Kinds lists every kind.
var Kinds = []Kind{Derived, Analytics, External, Permission, Irreversible}

// rerunsUnknown: an UNKNOWN effect of this kind runs again without
// reconciling.
func (k Kind) rerunsUnknown() bool { return k == Derived || k == Analytics }

// MaxArgsBytes bounds an effect's canonical arguments.
const MaxArgsBytes = 64 << 10

var (
	// ErrAwaitingApproval: the effect waits for a person's approval; Do ran
	// nothing and wrote nothing. Approve it (eventlite effects approve),
	// then run it again, or let ResumeApproved run it.
	ErrAwaitingApproval = errors.New("effect awaits a person's approval")
	// ErrRejected: a person rejected the effect; it never runs. Final:
	// a new intent needs a new key.
	ErrRejected = errors.New("effect was rejected")
	// ErrArgsHashMismatch: an approval named other arguments than the
	// effect's (or a malformed hash); nothing changed.
	ErrArgsHashMismatch = errors.New("args hash does not match the effect's arguments")
)

// MismatchError: a key was run again with another kind, resource,
// approval flag or arguments than its first run fixed. errors.Is(err,
// store.ErrIdempotencyMismatch) holds for it: changed arguments need a new key
// (and a new approval).
type MismatchError struct {
	Tenant, Key     string
	Field           string // kind, resource, needs_approval or args (args shown by their hash)
	Recorded, Given string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("effect %q (tenant %s) was first run with %s %s, now %s: an effect's kind, resource, approval and arguments never change; use a new key (and ask for a new approval)",
		e.Key, e.Tenant, e.Field, e.Recorded, e.Given)
}

// Unwrap lets errors.Is(err, store.ErrIdempotencyMismatch) match.
func (e *MismatchError) Unwrap() error { return store.ErrIdempotencyMismatch }

// PermissionError: a permission effect's Check refused the attempt;
// nothing ran and the effect's state is unchanged. It unwraps to Check's
// error.
type PermissionError struct {
	Tenant, Key string
	Err         error
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("effect %q (tenant %s): permission check failed, nothing ran: %v", e.Key, e.Tenant, e.Err)
}

// Unwrap returns Check's error.
func (e *PermissionError) Unwrap() error { return e.Err }

// NotFoundError: no effect of that key in the tenant.
// errors.Is(err, store.ErrNotFound) holds for it.
type NotFoundError struct{ Tenant, Key string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no effect %q in tenant %s", e.Key, e.Tenant)
}

// Unwrap lets errors.Is(err, store.ErrNotFound) match.
func (e *NotFoundError) Unwrap() error { return store.ErrNotFound }

// ArgsHashMismatchError: an approval named a hash other than the
// effect's. errors.Is(err, ErrArgsHashMismatch) holds for it.
type ArgsHashMismatchError struct {
	Tenant, Key     string
	Recorded, Given string
}

func (e *ArgsHashMismatchError) Error() string {
	return fmt.Sprintf("effect %q (tenant %s): --args-hash %q is not the hash of its arguments (%s): read them again with 'eventlite effects list' and approve what you read; nothing changed",
		e.Key, e.Tenant, e.Given, e.Recorded)
}

// Unwrap lets errors.Is(err, ErrArgsHashMismatch) match.
func (e *ArgsHashMismatchError) Unwrap() error { return ErrArgsHashMismatch }

// Intent describes one effect for Do.
type Intent struct {
	Tenant string
	Key    string // 1-255 bytes: the effect's identity within the tenant
	// Kind decides what may run again (see Kind). Default external.
	Kind Kind
	// Resource names what the effect acts on (an order, an account): free
	// text, optional.
	Resource string
	// Summary says what it does, for the person who approves it.
	Summary string
	// RequestedBy names who or what asks for the effect (a service, a
	// person): free text, declared not authenticated; required with
	// NeedsApproval.
	RequestedBy string
	// Args are the call's arguments: any value encoding/json marshals (a
	// json.RawMessage as it is). They are stored in RFC 8785 canonical
	// form, at most MaxArgsBytes, and the call always receives the
	// stored bytes. nil or JSON null: no arguments.
	Args any
	// ErasureKey, when set, names the subject whose data the arguments
	// hold (the erasurekey of its events): the arguments and the error
	// text are stored encrypted with the subject's data key (created on
	// first use; the store needs its master key), so that Forget makes
	// them unreadable for good. A Do after the forget is refused (an
	// *envelope.InvalidError on erasurekey). Fixed by the first run.
	ErasureKey string
	// NeedsApproval: a person approves the exact arguments before the
	// effect runs. Irreversible effects require it.
	NeedsApproval bool
	// ApprovalValidFor: an approval older than this sends the effect back
	// to AWAITING_APPROVAL (0: approvals never expire). Recorded by the
	// first run; later runs' values do not change it.
	ApprovalValidFor time.Duration
	// Check verifies the permission before every attempt of a permission
	// effect (required for that kind, ignored for others). An error stops
	// the attempt with a *PermissionError; the state is unchanged.
	Check func(ctx context.Context, e Effect) error
}

// prepare validates r and returns its kind and canonical arguments ("" for
// none).
func (r Intent) prepare() (Kind, string, error) {
	if err := validateEffect(r.Tenant, r.Key); err != nil {
		return "", "", err
	}
	kind := r.Kind
	if kind == "" {
		kind = External
	}
	known := false
	for _, k := range Kinds {
		known = known || k == kind
	}
	bad := func(field, reason string) error {
		return &envelope.InvalidError{Index: -1, Field: field, Reason: reason}
	}
	switch {
	case !known:
		return "", "", bad("kind", fmt.Sprintf("%q is not one of derived, analytics, external, permission, irreversible", string(kind)))
	case kind == Irreversible && !r.NeedsApproval:
		return "", "", bad("needs_approval", "an irreversible effect runs only with a person's approval: set NeedsApproval")
	case kind == Permission && r.Check == nil:
		return "", "", bad("check", "a permission effect needs a Check that verifies the permission before every attempt")
	case r.NeedsApproval && r.RequestedBy == "":
		return "", "", bad("requested_by", "required with NeedsApproval: name who asks for the effect")
	case r.ApprovalValidFor < 0:
		return "", "", bad("approval_valid_for", "must not be negative (0: approvals never expire)")
	}
	for _, f := range []struct{ name, v string }{{"resource", r.Resource}, {"summary", r.Summary}, {"requested_by", r.RequestedBy}} {
		if err := envelope.ValidateText(f.name, f.v, false); err != nil {
			return "", "", err
		}
	}
	args, err := canonicalArgs(r.Args)
	if err != nil {
		return "", "", err
	}
	return kind, args, nil
}

// canonicalArgs returns the RFC 8785 form of v ("" for nil or null).
func canonicalArgs(v any) (string, error) {
	var raw []byte
	switch v := v.(type) {
	case nil:
		return "", nil
	case json.RawMessage:
		raw = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", &envelope.InvalidError{Index: -1, Field: "args", Reason: "cannot be encoded as JSON: " + err.Error()}
		}
		raw = b
	}
	canon, err := jcs.Canonicalize(raw)
	if err != nil {
		return "", &envelope.InvalidError{Index: -1, Field: "args", Reason: "not I-JSON (RFC 7493): " + err.Error()}
	}
	if len(canon) > MaxArgsBytes {
		return "", &envelope.TooLargeError{Index: -1, Field: "args", Size: len(canon), Limit: MaxArgsBytes}
	}
	if string(canon) == "null" {
		return "", nil
	}
	return string(canon), nil
}

// approvalExpired: the effect's approval is older than its validity.
func approvalExpired(e Effect, now int64) bool {
	return e.ApprovalValidFor > 0 && !e.DecidedAt.IsZero() && now-e.DecidedAt.UnixNano() > int64(e.ApprovalValidFor)
}

// askAgain sends e back to AWAITING_APPROVAL, its old approval cleared.
func askAgain(e *Effect, now int64) {
	e.State = AwaitingApproval
	e.RequestedAt = time.Unix(0, now).UTC()
	e.DecidedBy, e.DecidedAt, e.Reason = "", time.Time{}, ""
}

// Do performs the effect r describes at most once per tenant and key, with
// the retry rules of its kind, and call receives the stored canonical
// arguments (nil for none). The first Do records the effect: kind,
// resource, approval flag and arguments are fixed from then on, and a
// later Do that differs in any of them gets an *MismatchError.
//
// Do never blocks on a person. An effect that needs approval is recorded
// AWAITING_APPROVAL and Do returns it with an error matching
// ErrAwaitingApproval, running nothing (and, once recorded, writing
// nothing); a REJECTED one returns an error matching ErrRejected. An
// APPROVED one runs (an approval older than ApprovalValidFor first goes
// back to AWAITING_APPROVAL). A COMPLETED or COMPENSATED effect is
// returned as it is. The outcome is recorded as Run records it.
func (l *Ledger) Do(ctx context.Context, r Intent, call func(ctx context.Context, args json.RawMessage) (providerRef string, err error)) (Effect, error) {
	if call == nil {
		return Effect{}, &envelope.InvalidError{Index: -1, Field: "call", Reason: "required"}
	}
	kind, args, err := r.prepare()
	if err != nil {
		return Effect{}, err
	}
	e, err := l.record(ctx, r, kind, args)
	if err != nil {
		return e, err
	}
	switch e.State {
	case Completed, Compensated:
		return e, nil
	case AwaitingApproval:
		return e, fmt.Errorf("effect %q (tenant %s) requested by %s: %w since %s: 'eventlite effects approve %s --args-hash %s'",
			e.Key, e.Tenant, e.RequestedBy, ErrAwaitingApproval, e.RequestedAt.Format(time.RFC3339), e.Key, e.ArgsHash())
	case Rejected:
		return e, fmt.Errorf("effect %q (tenant %s): %w by %s at %s (reason %q): it never runs",
			e.Key, e.Tenant, ErrRejected, e.DecidedBy, e.DecidedAt.Format(time.RFC3339), e.Reason)
	case Executing:
		return e, &StateError{Tenant: e.Tenant, Key: e.Key, State: e.State, Step: "run it again"}
	case Unknown:
		if !kind.rerunsUnknown() {
			return e, &StateError{Tenant: e.Tenant, Key: e.Key, State: e.State, Step: "run it again"}
		}
	}
	return l.attempt(ctx, e, r.Check, func(ctx context.Context, e Effect) (string, error) { return call(ctx, e.Args) })
}

// record inserts the effect, or reads it and checks that r matches what
// its first run fixed; an expired approval goes back to
// AWAITING_APPROVAL.
func (l *Ledger) record(ctx context.Context, r Intent, kind Kind, args string) (Effect, error) {
	// Most runs find the row as it should be: read it first, so that an
	// effect awaiting a decision costs no write.
	if e, ok, err := l.Get(ctx, r.Tenant, r.Key); err != nil {
		return Effect{}, err
	} else if ok {
		if err := matches(e, r, kind, args); err != nil {
			return e, err
		}
		if e.State == AwaitingApproval || e.State == Rejected || e.State == Completed {
			return e, nil
		}
	}
	in := store.Inner(inside.Key{}, l.s)
	var e Effect
	err := l.s.Update(ctx, func(tx *store.Tx) error {
		now := in.Now(tx)
		state, requested := Reserved, int64(0)
		if r.NeedsApproval {
			state, requested = AwaitingApproval, now
		}
		row := driver.EffectRow{Tenant: r.Tenant, Key: r.Key, State: string(state), CreatedAt: now, UpdatedAt: now,
			Kind: string(kind), Resource: r.Resource, Summary: r.Summary, Args: args, NeedsApproval: r.NeedsApproval,
			ApprovalValidFor: int64(r.ApprovalValidFor), RequestedBy: r.RequestedBy, RequestedAt: requested}
		if r.ErasureKey != "" {
			// Sealed before anything is stored; a forgotten subject is
			// refused here.
			ne := effectOf(row)
			ne.ErasureKey = r.ErasureKey
			var err error
			if row, err = l.seal(ctx, tx, ne, nil, true); err != nil {
				return err
			}
		}
		_, _, err := in.ReserveEffect(ctx, tx, row, func(cur *driver.EffectRow) (bool, error) {
			var err error
			if e, err = l.open(ctx, tx, *cur); err != nil {
				return false, err
			}
			if err := matches(e, r, kind, args); err != nil {
				return false, err
			}
			if e.NeedsApproval && (e.State == Approved || e.State == Failed) && approvalExpired(e, now) {
				askAgain(&e, now)
				e.UpdatedAt = time.Unix(0, now).UTC()
				if *cur, err = l.seal(ctx, tx, e, cur, false); err != nil {
					return false, err
				}
				return true, nil
			}
			return false, nil
		})
		return err
	})
	if err != nil {
		return Effect{}, fmt.Errorf("record effect %q: %w", r.Key, err)
	}
	return e, nil
}

// matches checks r against what the effect's first run fixed.
func matches(e Effect, r Intent, kind Kind, args string) error {
	mismatch := func(field, recorded, given string) error {
		return &MismatchError{Tenant: e.Tenant, Key: e.Key, Field: field, Recorded: recorded, Given: given}
	}
	switch {
	case e.Kind != kind:
		return mismatch("kind", string(e.Kind), string(kind))
	case e.Resource != r.Resource:
		return mismatch("resource", fmt.Sprintf("%q", e.Resource), fmt.Sprintf("%q", r.Resource))
	case e.NeedsApproval != r.NeedsApproval:
		return mismatch("needs_approval", fmt.Sprint(e.NeedsApproval), fmt.Sprint(r.NeedsApproval))
	case e.ErasureKey != r.ErasureKey:
		return mismatch("erasure_key", fmt.Sprintf("%q", e.ErasureKey), fmt.Sprintf("%q", r.ErasureKey))
	case e.ArgsErased:
		return &envelope.InvalidError{Index: -1, Field: envelope.ExtErasureKey, Reason: fmt.Sprintf("subject %q (tenant %s) was forgotten: effect %q's arguments are erased, so it cannot be compared or run again", e.ErasureKey, e.Tenant, e.Key)}
	case e.ArgsEncrypted:
		return fmt.Errorf("effect %q carries %s %q: %w: open the store with a master key", e.Key, envelope.ExtErasureKey, e.ErasureKey, store.ErrNoMasterKey)
	case string(e.Args) != args:
		given := Effect{Args: json.RawMessage(args)}
		return mismatch("args", "of hash "+e.ArgsHash(), "of hash "+given.ArgsHash())
	}
	return nil
}

// attempt runs one attempt of e: the permission check, Begin, call, and
// the outcome.
func (l *Ledger) attempt(ctx context.Context, e Effect, check func(context.Context, Effect) error, call func(context.Context, Effect) (string, error)) (Effect, error) {
	if e.Kind == Permission {
		if check == nil {
			return e, &StateError{Tenant: e.Tenant, Key: e.Key, State: e.State, Step: "run a permission effect without its Check (use Do)"}
		}
		if err := check(ctx, e); err != nil {
			return e, &PermissionError{Tenant: e.Tenant, Key: e.Key, Err: err}
		}
	}
	started, err := l.steps().Begin(ctx, e.Tenant, e.Key)
	if err != nil {
		return e, err
	}
	ref, callErr := call(ctx, started)
	// Record the outcome even when ctx ended: the call happened or not
	// regardless of the caller's patience.
	rec := context.WithoutCancel(ctx)
	switch {
	case callErr == nil:
		return l.steps().Complete(rec, e.Tenant, e.Key, ref)
	case errors.Is(callErr, ErrOutcomeUnknown) || errors.Is(callErr, context.DeadlineExceeded):
		e, err := l.steps().MarkUnknown(rec, e.Tenant, e.Key, callErr.Error())
		if err != nil {
			return e, errors.Join(callErr, err)
		}
		return e, callErr
	default:
		e, err := l.steps().Fail(rec, e.Tenant, e.Key, callErr.Error())
		if err != nil {
			return e, errors.Join(callErr, err)
		}
		return e, callErr
	}
}

// Approval is a person's approval of one effect's exact arguments
// (Ledger.Approve).
type Approval struct {
	// Tenant and Key name the effect.
	Tenant, Key string
	// ArgsHash must be the effect's ArgsHash: the hash of the arguments
	// the person was shown ('eventlite effects list' shows it).
	ArgsHash string
	// By names who approves: declared, not authenticated. Required.
	By string
}

// Rejection is a person's refusal of one effect (Ledger.Reject).
type Rejection struct {
	// Tenant and Key name the effect.
	Tenant, Key string
	// Reason says why; optional.
	Reason string
	// By names who refuses: declared, not authenticated. Required.
	By string
}

// Approve records a person's approval of the effect's exact arguments:
// a.ArgsHash must be its ArgsHash (the hash 'eventlite effects list'
// shows). The effect must be AWAITING_APPROVAL, or already APPROVED (then
// nothing changes: the first approver stays). a.By names who approves:
// declared, not authenticated. Approval runs nothing: the effect runs on
// the next Do with its key, or through ResumeApproved.
//
// Errors, checked in this order: no such effect (*NotFoundError,
// store.ErrNotFound); another state (*StateError); another hash, a
// malformed one included (*ArgsHashMismatchError). Nothing changes on an
// error.
func (l *Ledger) Approve(ctx context.Context, a Approval) (Effect, error) {
	tenant, key, argsHash, by := a.Tenant, a.Key, a.ArgsHash, a.By
	if err := envelope.ValidateText("by", by, true); err != nil {
		return Effect{}, err
	}
	return l.decide(ctx, tenant, key, "approve", func(now int64, prev State, e *Effect) error {
		switch {
		case e.ArgsErased:
			return &envelope.InvalidError{Index: -1, Field: envelope.ExtErasureKey, Reason: fmt.Sprintf("subject %q (tenant %s) was forgotten: effect %q's arguments are erased and cannot be approved; reject it", e.ErasureKey, tenant, key)}
		case e.ArgsEncrypted:
			return fmt.Errorf("effect %q carries %s %q: %w: its arguments cannot be shown or approved without the master key", key, envelope.ExtErasureKey, e.ErasureKey, store.ErrNoMasterKey)
		}
		if h := e.ArgsHash(); argsHash != h {
			return &ArgsHashMismatchError{Tenant: tenant, Key: key, Recorded: h, Given: argsHash}
		}
		if prev == Approved {
			return errUnchanged
		}
		e.State = Approved
		e.DecidedBy, e.DecidedAt, e.Reason = by, time.Unix(0, now).UTC(), ""
		return nil
	})
}

// Reject records a person's refusal: the effect (AWAITING_APPROVAL or
// APPROVED) becomes REJECTED, for good, with who, when and why. r.By is
// declared, not authenticated; r.Reason is optional. Errors as Approve's.
func (l *Ledger) Reject(ctx context.Context, r Rejection) (Effect, error) {
	tenant, key, reason, by := r.Tenant, r.Key, r.Reason, r.By
	if err := envelope.ValidateText("by", by, true); err != nil {
		return Effect{}, err
	}
	if err := envelope.ValidateText("reason", reason, false); err != nil {
		return Effect{}, err
	}
	return l.decide(ctx, tenant, key, "reject", func(now int64, _ State, e *Effect) error {
		e.State = Rejected
		e.DecidedBy, e.DecidedAt, e.Reason = by, time.Unix(0, now).UTC(), reason
		return nil
	})
}

// errUnchanged: a decision that changes nothing (approving an approved
// effect again); its transaction writes nothing.
var errUnchanged = errors.New("unchanged")

func (l *Ledger) decide(ctx context.Context, tenant, key, step string, set func(now int64, prev State, e *Effect) error) (Effect, error) {
	e, err := l.transition(ctx, tenant, key, step, []State{AwaitingApproval, Approved}, "", set)
	if errors.Is(err, errUnchanged) {
		e, _, err = l.Get(ctx, tenant, key)
	}
	if err != nil {
		return Effect{}, fmt.Errorf("%s effect: %w", step, err)
	}
	return e, nil
}

// ResumeApproved runs every APPROVED effect of the tenant, each once, and
// passes call the effect and its stored arguments: what a service does at
// start, after a crash between approval and execution, or on a timer. An
// approval older than the effect's ApprovalValidFor goes back to
// AWAITING_APPROVAL instead. Permission effects are left APPROVED: their
// Check is the application's, so they run through Do. It returns the
// effects it ran or sent back, as they ended, and the call errors joined;
// an effect another process began meanwhile is skipped.
func (l *Ledger) ResumeApproved(ctx context.Context, tenant string, call func(ctx context.Context, e Effect, args json.RawMessage) (providerRef string, err error)) ([]Effect, error) {
	if err := envelope.ValidateTenant(tenant); err != nil {
		return nil, err
	}
	approved, err := l.List(ctx, Filter{Tenant: tenant, States: []State{Approved}})
	if err != nil {
		return nil, err
	}
	var (
		out  []Effect
		errs []error
	)
	for _, a := range approved {
		if a.Kind == Permission {
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, errors.Join(append(errs, err)...)
		}
		r := Intent{Tenant: a.Tenant, Key: a.Key, Kind: a.Kind, Resource: a.Resource, NeedsApproval: a.NeedsApproval, ErasureKey: a.ErasureKey}
		e, err := l.record(ctx, r, a.Kind, string(a.Args))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if e.State != Approved {
			if e.State == AwaitingApproval {
				out = append(out, e) // its approval expired
			}
			continue
		}
		e, err = l.attempt(ctx, e, nil, func(ctx context.Context, e Effect) (string, error) { return call(ctx, e, e.Args) })
		var se *StateError
		if errors.As(err, &se) && se.Step == "begin" {
			continue // another process began it meanwhile
		}
		out = append(out, e)
		if err != nil {
			errs = append(errs, fmt.Errorf("effect %q: %w", a.Key, err))
		}
	}
	return out, errors.Join(errs...)
}
