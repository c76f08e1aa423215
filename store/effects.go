package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/eventlite/eventlite/envelope"
)

// Effects is the store's effect ledger, reached with Store.Effects: one
// row per side effect on an outside system, keyed by tenant and key,
// moving reserved, started, then completed, failed, unknown or
// compensated.
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
)

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
}

const selectEffect = `SELECT state, provider_ref, attempts, last_error, created_at, updated_at, COALESCE(started_at, 0) FROM effects WHERE tenant = ? AND effect_key = ?`

func scanEffect(row *sql.Row, tenant, key string) (Effect, bool, error) {
	e := Effect{Tenant: tenant, Key: key}
	var c, u, st int64
	err := row.Scan(&e.State, &e.ProviderRef, &e.Attempts, &e.LastError, &c, &u, &st)
	if errors.Is(err, sql.ErrNoRows) {
		return Effect{}, false, nil
	}
	if err != nil {
		return Effect{}, false, mapErr(err)
	}
	e.CreatedAt, e.UpdatedAt = time.Unix(0, c).UTC(), time.Unix(0, u).UTC()
	if st != 0 {
		e.StartedAt = time.Unix(0, st).UTC()
	}
	return e, true, nil
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
	return scanEffect(s.rdb.QueryRowContext(ctx, selectEffect, tenant, key), tenant, key)
}

// Reserve records the intent to perform an effect. A second reserve
// of the same tenant and key returns the existing row (created false): no
// second effect.
func (ef *Effects) Reserve(ctx context.Context, tenant, key string) (Effect, bool, error) {
	s := ef.s
	if err := validateEffect(tenant, key); err != nil {
		return Effect{}, false, err
	}
	var e Effect
	var created bool
	err := s.Update(ctx, func(tx *Tx) error {
		res, err := s.wconn.ExecContext(ctx, `INSERT INTO effects (tenant, effect_key, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, tenant, key, EffectReserved, tx.now, tx.now)
		if err != nil {
			return mapErr(err)
		}
		n, _ := res.RowsAffected()
		created = n == 1
		e, _, err = scanEffect(s.wconn.QueryRowContext(ctx, selectEffect, tenant, key), tenant, key)
		return err
	})
	if err != nil {
		return Effect{}, false, fmt.Errorf("reserve effect %q: %w", key, err)
	}
	return e, created, nil
}

// transition moves an effect from one of the allowed states to next.
func (s *Store) transition(ctx context.Context, tenant, key, step string, from []EffectState, next EffectState, set func(tx *Tx, e *Effect) error) (Effect, error) {
	if err := validateEffect(tenant, key); err != nil {
		return Effect{}, err
	}
	var e Effect
	err := s.Update(ctx, func(tx *Tx) error {
		cur, ok, err := scanEffect(s.wconn.QueryRowContext(ctx, selectEffect, tenant, key), tenant, key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("effect %q (tenant %s): %w: reserve it first", key, tenant, ErrNotFound)
		}
		allowed := false
		for _, f := range from {
			allowed = allowed || cur.State == f
		}
		if !allowed {
			return &EffectStateError{Tenant: tenant, Key: key, State: cur.State, Step: step}
		}
		cur.State = next
		cur.UpdatedAt = time.Unix(0, tx.now).UTC()
		if set != nil {
			if err := set(tx, &cur); err != nil {
				return err
			}
		}
		var started any
		if !cur.StartedAt.IsZero() {
			started = cur.StartedAt.UnixNano()
		}
		_, err = s.wconn.ExecContext(ctx, `UPDATE effects SET state = ?, provider_ref = ?, attempts = ?, last_error = ?, updated_at = ?, started_at = ?
			WHERE tenant = ? AND effect_key = ?`, cur.State, cur.ProviderRef, cur.Attempts, cur.LastError, tx.now, started, tenant, key)
		e = cur
		return mapErr(err)
	})
	if err != nil {
		return Effect{}, err
	}
	return e, nil
}

// Begin marks the start of an attempt (RESERVED or FAILED ->
// EXECUTING). UNKNOWN is refused: reconcile it first.
func (ef *Effects) Begin(ctx context.Context, tenant, key string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "begin", []EffectState{EffectReserved, EffectFailed}, EffectExecuting, func(tx *Tx, e *Effect) error {
		e.Attempts++
		e.StartedAt = time.Unix(0, tx.now).UTC()
		return nil
	})
}

// Complete records that the effect happened, with the provider's
// reference (EXECUTING or UNKNOWN -> COMPLETED).
func (ef *Effects) Complete(ctx context.Context, tenant, key, providerRef string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "complete", []EffectState{EffectExecuting, EffectUnknown}, EffectCompleted, func(tx *Tx, e *Effect) error {
		e.ProviderRef = providerRef
		return nil
	})
}

// Fail records that the attempt certainly did not happen
// (EXECUTING or UNKNOWN -> FAILED); a retry with the same key may follow.
func (ef *Effects) Fail(ctx context.Context, tenant, key, reason string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "fail", []EffectState{EffectExecuting, EffectUnknown}, EffectFailed, func(tx *Tx, e *Effect) error {
		e.LastError = reason
		return nil
	})
}

// MarkUnknown records that the attempt may have happened
// (EXECUTING -> UNKNOWN). It is not retried until reconciled.
func (ef *Effects) MarkUnknown(ctx context.Context, tenant, key, reason string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "mark unknown", []EffectState{EffectExecuting}, EffectUnknown, func(tx *Tx, e *Effect) error {
		e.LastError = reason
		return nil
	})
}

// Compensate records that a completed effect was undone.
func (ef *Effects) Compensate(ctx context.Context, tenant, key string) (Effect, error) {
	s := ef.s
	return s.transition(ctx, tenant, key, "compensate", []EffectState{EffectCompleted}, EffectCompensated, nil)
}

// Run performs an external call at most once per tenant and key:
// it reserves the effect (a completed one is returned as is, without a
// call), begins an attempt, runs call, and records the outcome: COMPLETED
// with the provider reference, UNKNOWN when call's error wraps
// ErrOutcomeUnknown, FAILED otherwise. An UNKNOWN or EXECUTING effect is
// refused with an *EffectStateError: it may have happened, so it is
// reconciled, never retried blindly.
func (ef *Effects) Run(ctx context.Context, tenant, key string, call func(ctx context.Context) (providerRef string, err error)) (Effect, error) {
	s := ef.s
	e, _, err := s.Effects().Reserve(ctx, tenant, key)
	if err != nil {
		return Effect{}, err
	}
	switch e.State {
	case EffectCompleted, EffectCompensated:
		return e, nil
	case EffectExecuting, EffectUnknown:
		return e, &EffectStateError{Tenant: tenant, Key: key, State: e.State, Step: "run it again"}
	}
	if _, err := s.Effects().Begin(ctx, tenant, key); err != nil {
		return Effect{}, err
	}
	ref, callErr := call(ctx)
	// Record the outcome even when ctx ended: the call happened or not
	// regardless of the caller's patience.
	rec := context.WithoutCancel(ctx)
	switch {
	case callErr == nil:
		return s.Effects().Complete(rec, tenant, key, ref)
	case errors.Is(callErr, ErrOutcomeUnknown) || errors.Is(callErr, context.DeadlineExceeded):
		e, err := s.Effects().MarkUnknown(rec, tenant, key, callErr.Error())
		if err != nil {
			return e, errors.Join(callErr, err)
		}
		return e, callErr
	default:
		e, err := s.Effects().Fail(rec, tenant, key, callErr.Error())
		if err != nil {
			return e, errors.Join(callErr, err)
		}
		return e, callErr
	}
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
			if _, err := s.Effects().MarkUnknown(ctx, e.Tenant, e.Key, "attempt started "+e.StartedAt.Format(time.RFC3339)+" never finished"); err != nil {
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
			if _, err := s.Effects().Complete(ctx, e.Tenant, e.Key, ref); err != nil {
				return res, err
			}
			res.Completed++
		case DidNotHappen:
			if _, err := s.Effects().Fail(ctx, e.Tenant, e.Key, "reconciled: the provider confirms it did not happen"); err != nil {
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
	q := `SELECT tenant, effect_key, state, provider_ref, attempts, last_error, created_at, updated_at, COALESCE(started_at, 0)
		FROM effects WHERE (? = '' OR tenant = ?)`
	args := []any{f.Tenant, f.Tenant}
	if len(f.States) > 0 {
		q += ` AND state IN (?` + repeatPlaceholders(len(f.States)-1) + `)`
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	rows, err := s.rdb.QueryContext(ctx, q+` ORDER BY updated_at`, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []Effect
	for rows.Next() {
		var e Effect
		var c, u, st int64
		if err := rows.Scan(&e.Tenant, &e.Key, &e.State, &e.ProviderRef, &e.Attempts, &e.LastError, &c, &u, &st); err != nil {
			return nil, err
		}
		e.CreatedAt, e.UpdatedAt = time.Unix(0, c).UTC(), time.Unix(0, u).UTC()
		if st != 0 {
			e.StartedAt = time.Unix(0, st).UTC()
		}
		out = append(out, e)
	}
	return out, mapErr(rows.Err())
}

func repeatPlaceholders(n int) string {
	b := make([]byte, 0, 3*n)
	for range n {
		b = append(b, ", ?"...)
	}
	return string(b)
}
