package effect

import (
	"context"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// steps is the effect ledger's state machine: reserve an effect, begin an
// attempt, record its outcome. An application runs effects with
// Ledger.Do, Run and ResumeApproved, which take these steps in order; a
// step taken out of order would record an effect that did not happen, or
// run one twice.
type steps struct{ l *Ledger }

func (l *Ledger) steps() steps { return steps{l} }

// Steps is for eventlite's own packages and their tests: the effect
// ledger's state machine (Reserve, Begin, Complete, Fail, MarkUnknown).
// Its key's package is internal to eventlite, so an application cannot
// call it; it runs effects with Ledger.Do, Run and ResumeApproved.
func Steps(_ inside.Key, l *Ledger) steps { return l.steps() }

// Reserve records the intent to perform an effect. A second reserve
// of the same tenant and key returns the existing row (created false): no
// second effect.
func (st steps) Reserve(ctx context.Context, tenant, key string) (Effect, bool, error) {
	l := st.l
	if err := validateEffect(tenant, key); err != nil {
		return Effect{}, false, err
	}
	in := store.Inner(inside.Key{}, l.s)
	var e Effect
	var created bool
	err := l.s.Update(ctx, func(tx *store.Tx) error {
		now := in.Now(tx)
		// An external effect without arguments: the columns' defaults.
		r, c, err := in.ReserveEffect(ctx, tx, driver.EffectRow{Tenant: tenant, Key: key, State: string(Reserved),
			CreatedAt: now, UpdatedAt: now, Kind: string(External)}, nil)
		if err != nil {
			return err
		}
		created = c
		e, err = l.open(ctx, tx, r)
		return err
	})
	if err != nil {
		return Effect{}, false, fmt.Errorf("reserve effect %q: %w", key, err)
	}
	return e, created, nil
}

// Begin marks the start of an attempt (RESERVED, FAILED or APPROVED ->
// EXECUTING). UNKNOWN is refused (reconcile it first) except for the
// kinds that may run again without reconciling (derived, analytics); an
// approval older than the effect's ApprovalValidFor is refused. Begin does
// not run a permission effect's Check: Do does.
func (st steps) Begin(ctx context.Context, tenant, key string) (Effect, error) {
	return st.l.transition(ctx, tenant, key, "begin", []State{Reserved, Failed, Approved, Unknown}, Executing,
		func(now int64, prev State, e *Effect) error {
			if prev == Unknown && !e.Kind.rerunsUnknown() {
				return &StateError{Tenant: tenant, Key: key, State: prev, Step: "begin"}
			}
			if e.NeedsApproval && approvalExpired(*e, now) {
				return &StateError{Tenant: tenant, Key: key, State: prev, Step: "begin: its approval is older than " + e.ApprovalValidFor.String() + " (Do asks for a new one)"}
			}
			e.Attempts++
			e.StartedAt = time.Unix(0, now).UTC()
			return nil
		})
}

// Complete records that the effect happened, with the provider's
// reference (EXECUTING or UNKNOWN -> COMPLETED).
func (st steps) Complete(ctx context.Context, tenant, key, providerRef string) (Effect, error) {
	return st.l.transition(ctx, tenant, key, "complete", []State{Executing, Unknown}, Completed, func(_ int64, _ State, e *Effect) error {
		e.ProviderRef = providerRef
		return nil
	})
}

// Fail records that the attempt certainly did not happen
// (EXECUTING or UNKNOWN -> FAILED); a retry with the same key may follow.
// An irreversible effect goes back to AWAITING_APPROVAL instead, its
// approval cleared: only a person's new approval lets it run again.
func (st steps) Fail(ctx context.Context, tenant, key, reason string) (Effect, error) {
	return st.l.transition(ctx, tenant, key, "fail", []State{Executing, Unknown}, Failed, func(now int64, _ State, e *Effect) error {
		e.LastError = reason
		if e.Kind == Irreversible {
			askAgain(e, now)
		}
		return nil
	})
}

// MarkUnknown records that the attempt may have happened
// (EXECUTING -> UNKNOWN). It is not retried until reconciled.
func (st steps) MarkUnknown(ctx context.Context, tenant, key, reason string) (Effect, error) {
	return st.l.transition(ctx, tenant, key, "mark unknown", []State{Executing}, Unknown, func(_ int64, _ State, e *Effect) error {
		e.LastError = reason
		return nil
	})
}
