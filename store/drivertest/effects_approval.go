package drivertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/google/go-cmp/cmp"
)

// refund is the arguments of the tests' refund effect.
type refund struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
	Note   string `json:"note"`
}

// recorder is an outside system: it counts calls and keeps the arguments
// each call received.
type recorder struct {
	mu   sync.Mutex
	args []string
	fail []error // the next calls' errors, in order
}

func (r *recorder) call(_ context.Context, args json.RawMessage) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.args = append(r.args, string(args))
	if len(r.fail) > 0 {
		err := r.fail[0]
		r.fail = r.fail[1:]
		return "", err
	}
	return fmt.Sprintf("ref-%d", len(r.args)), nil
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.args...)
}

func refundRun(key string, args any) effect.Intent {
	return effect.Intent{Tenant: "default", Key: key, Kind: effect.External, Resource: "order/o-1",
		Summary: "refund 1250 cents to the customer of o-1", RequestedBy: "support-bot", Args: args, NeedsApproval: true}
}

// MustGetEffect reads an effect that must exist.
func MustGetEffect(t *testing.T, s *store.Store, tenant, key string) effect.Effect {
	t.Helper()
	e, ok, err := effect.For(s).Get(t.Context(), tenant, key)
	if err != nil || !ok {
		t.Fatalf("get %s/%s: %v (found %v)", tenant, key, err, ok)
	}
	return e
}

// A person approves the exact arguments; the effect runs once, with the
// stored canonical bytes, whatever form later runs give them in.

// A person approves the exact arguments; the effect runs once, with the
// stored canonical bytes, whatever form later runs give them in.
func testEffectApproveExactArguments(t *testing.T, h Harness) {
	ctx := t.Context()
	s := h.Open(t, nil)
	ext := &recorder{}
	run := refundRun("refund:o-1", refund{Order: "o-1", Amount: 1250, Note: "damaged <box> & late"})
	const canonical = `{"amount":1250,"note":"damaged <box> & late","order":"o-1"}`

	e, err := effect.For(s).Do(ctx, run, ext.call)
	if !errors.Is(err, effect.ErrAwaitingApproval) || e.State != effect.AwaitingApproval {
		t.Fatalf("first run: %+v %v, want AWAITING_APPROVAL", e, err)
	}
	if string(e.Args) != canonical || e.RequestedBy != "support-bot" || e.RequestedAt.IsZero() || e.Kind != effect.External {
		t.Errorf("recorded %+v", e)
	}
	sum := sha256.Sum256([]byte(canonical))
	if e.ArgsHash() != hex.EncodeToString(sum[:]) {
		t.Errorf("args hash %s, want the SHA-256 of the canonical bytes", e.ArgsHash())
	}
	// Running again while it waits changes nothing.
	again, err := effect.For(s).Do(ctx, run, ext.call)
	if diff := cmp.Diff(e, MustGetEffect(t, s, "default", "refund:o-1")); !errors.Is(err, effect.ErrAwaitingApproval) || diff != "" || again.State != e.State {
		t.Errorf("run while awaiting: %v, row (-before +after):\n%s", err, diff)
	}

	// A wrong or malformed hash changes nothing.
	for _, h := range []string{strings.Repeat("0", 64), "not-a-hash", strings.ToUpper(e.ArgsHash()), ""} {
		_, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-1", ArgsHash: h, By: "alice"})
		var he *effect.ArgsHashMismatchError
		if !errors.As(err, &he) || !errors.Is(err, effect.ErrArgsHashMismatch) || he.Recorded != e.ArgsHash() {
			t.Errorf("approve with hash %q: %v", h, err)
		}
	}
	if got := MustGetEffect(t, s, "default", "refund:o-1"); got.State != effect.AwaitingApproval || got.DecidedBy != "" {
		t.Fatalf("after refused approvals: %+v", got)
	}
	if n := len(ext.calls()); n != 0 {
		t.Fatalf("the external call ran %d times before approval", n)
	}

	a, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-1", ArgsHash: e.ArgsHash(), By: "alice"})
	if err != nil || a.State != effect.Approved || a.DecidedBy != "alice" || a.DecidedAt.IsZero() {
		t.Fatalf("approve: %+v %v", a, err)
	}
	// Approving again keeps the first approver.
	b, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-1", ArgsHash: e.ArgsHash(), By: "bob"})
	if err != nil || b.DecidedBy != "alice" || !b.DecidedAt.Equal(a.DecidedAt) {
		t.Errorf("second approval: %+v %v", b, err)
	}
	if n := len(ext.calls()); n != 0 {
		t.Fatalf("approval ran the call (%d calls)", n)
	}

	// The same arguments in another form: same effect, stored bytes.
	run.Args = json.RawMessage(` { "order" : "o-1", "note":"damaged \u003cbox\u003e & late", "amount": 1.25e3 } `)
	done, err := effect.For(s).Do(ctx, run, ext.call)
	if err != nil || done.State != effect.Completed || done.ProviderRef != "ref-1" || done.DecidedBy != "alice" {
		t.Fatalf("run after approval: %+v %v", done, err)
	}
	if got := ext.calls(); len(got) != 1 || got[0] != canonical {
		t.Errorf("calls %q, want one with %s", got, canonical)
	}
	if _, err := effect.For(s).Do(ctx, run, ext.call); err != nil || len(ext.calls()) != 1 {
		t.Errorf("a completed effect ran again: %v, %d calls", err, len(ext.calls()))
	}
	// A decision on a completed effect names its state.
	var se *effect.StateError
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-1", ArgsHash: e.ArgsHash(), By: "bob"}); !errors.As(err, &se) || se.State != effect.Completed {
		t.Errorf("approve a completed effect: %v", err)
	}
}

// Changed arguments, kind, resource or approval flag are a new intent:
// refused with nothing executed and nothing changed.
func testEffectChangedArgumentsRefused(t *testing.T, h Harness) {
	ctx := t.Context()
	s := h.Open(t, nil)
	ext := &recorder{}
	run := refundRun("refund:o-2", refund{Order: "o-2", Amount: 1250})
	e, _ := effect.For(s).Do(ctx, run, ext.call)
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-2", ArgsHash: e.ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	before := MustGetEffect(t, s, "default", "refund:o-2")
	changes := map[string]func(r *effect.Intent){
		"args":           func(r *effect.Intent) { r.Args = refund{Order: "o-2", Amount: 99999} },
		"no args":        func(r *effect.Intent) { r.Args = nil },
		"kind":           func(r *effect.Intent) { r.Kind = effect.Irreversible },
		"resource":       func(r *effect.Intent) { r.Resource = "order/o-3" },
		"needs_approval": func(r *effect.Intent) { r.NeedsApproval = false },
	}
	for name, change := range changes {
		r := run
		change(&r)
		_, err := effect.For(s).Do(ctx, r, ext.call)
		var me *effect.MismatchError
		if !errors.As(err, &me) || !errors.Is(err, store.ErrIdempotencyMismatch) {
			t.Errorf("%s changed: %v, want an *EffectMismatchError", name, err)
		}
	}
	// The plain Run of a key with arguments and approval is a mismatch too.
	if _, err := effect.For(s).Run(ctx, "default", "refund:o-2", func(context.Context) (string, error) { return "x", nil }); !errors.Is(err, store.ErrIdempotencyMismatch) {
		t.Errorf("Run on an approved effect: %v", err)
	}
	if n := len(ext.calls()); n != 0 {
		t.Errorf("a refused run executed (%d calls)", n)
	}
	if after := MustGetEffect(t, s, "default", "refund:o-2"); after.State != effect.Approved || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("a refused run changed the effect: %+v", after)
	}
}

// Two people approving at once: one approval is recorded, both see it.
func testEffectConcurrentApprovals(t *testing.T, h Harness) {
	ctx := t.Context()
	s := h.Open(t, nil)
	e, _ := effect.For(s).Do(ctx, refundRun("refund:o-3", refund{Order: "o-3", Amount: 5}), (&recorder{}).call)
	names := []string{"alice", "bob", "carol", "dave"}
	got := make([]effect.Effect, len(names))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, name := range names {
		wg.Go(func() {
			<-start
			a, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-3", ArgsHash: e.ArgsHash(), By: name})
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			got[i] = a
		})
	}
	close(start)
	wg.Wait()
	final := MustGetEffect(t, s, "default", "refund:o-3")
	if final.State != effect.Approved {
		t.Fatalf("%+v", final)
	}
	for i, a := range got {
		if a.DecidedBy != final.DecidedBy || !a.DecidedAt.Equal(final.DecidedAt) {
			t.Errorf("%s saw approver %q at %v; the recorded one is %q at %v", names[i], a.DecidedBy, a.DecidedAt, final.DecidedBy, final.DecidedAt)
		}
	}
}

// A rejected effect never runs; a decision on it is refused, naming its
// state.
func testEffectRejectThenRun(t *testing.T, h Harness) {
	ctx := t.Context()
	s := h.Open(t, nil)
	ext := &recorder{}
	run := refundRun("refund:o-4", refund{Order: "o-4", Amount: 5})
	e, _ := effect.For(s).Do(ctx, run, ext.call)
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-4", ArgsHash: e.ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	// Reject works from APPROVED too (a second look).
	r, err := effect.For(s).Reject(ctx, effect.Rejection{Tenant: "default", Key: "refund:o-4", Reason: "customer already refunded by bank transfer", By: "bob"})
	if err != nil || r.State != effect.Rejected || r.DecidedBy != "bob" || r.Reason != "customer already refunded by bank transfer" {
		t.Fatalf("reject: %+v %v", r, err)
	}
	if _, err := effect.For(s).Do(ctx, run, ext.call); !errors.Is(err, effect.ErrRejected) {
		t.Errorf("run after reject: %v", err)
	}
	if res, err := effect.For(s).ResumeApproved(ctx, "default", func(ctx context.Context, e effect.Effect, args json.RawMessage) (string, error) {
		return ext.call(ctx, args)
	}); err != nil || len(res) != 0 {
		t.Errorf("resume: %+v %v", res, err)
	}
	var se *effect.StateError
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-4", ArgsHash: e.ArgsHash(), By: "carol"}); !errors.As(err, &se) || se.State != effect.Rejected {
		t.Errorf("approve a rejected effect: %v", err)
	}
	if _, err := effect.For(s).Reject(ctx, effect.Rejection{Tenant: "default", Key: "refund:o-4", Reason: "", By: "carol"}); !errors.As(err, &se) || se.State != effect.Rejected {
		t.Errorf("reject a rejected effect: %v", err)
	}
	if n := len(ext.calls()); n != 0 {
		t.Errorf("a rejected effect ran %d times", n)
	}
	if got := MustGetEffect(t, s, "default", "refund:o-4"); got.DecidedBy != "bob" {
		t.Errorf("a refused decision changed the row: %+v", got)
	}
}

// Keys never cross tenants: another tenant's key is not found, and
// ResumeApproved runs only its own tenant's effects.
func testEffectOtherTenantNotFound(t *testing.T, h Harness) {
	ctx := t.Context()
	s := h.Open(t, nil)
	ext := &recorder{}
	e, _ := effect.For(s).Do(ctx, refundRun("refund:o-5", refund{Order: "o-5"}), ext.call)
	var nf *effect.NotFoundError
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "acme", Key: "refund:o-5", ArgsHash: e.ArgsHash(), By: "mallory"}); !errors.As(err, &nf) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("approve from another tenant: %v", err)
	}
	if _, err := effect.For(s).Reject(ctx, effect.Rejection{Tenant: "acme", Key: "refund:o-5", Reason: "", By: "mallory"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reject from another tenant: %v", err)
	}
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: e.ArgsHash(), ArgsHash: e.ArgsHash(), By: "alice"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("approve an unknown key: %v", err)
	}
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-5", ArgsHash: e.ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	res, err := effect.For(s).ResumeApproved(ctx, "acme", func(ctx context.Context, e effect.Effect, args json.RawMessage) (string, error) {
		return ext.call(ctx, args)
	})
	if err != nil || len(res) != 0 || len(ext.calls()) != 0 {
		t.Errorf("another tenant's resume: %+v %v, %d calls", res, err, len(ext.calls()))
	}
}

// Each kind's row of the retry table.
func testEffectKinds(t *testing.T, h Harness) {
	unknown := fmt.Errorf("sink: %w: timed out after sending", effect.ErrOutcomeUnknown)
	failed := errors.New("provider said 503")
	t.Run("derived and analytics run FAILED and UNKNOWN again", func(t *testing.T) {
		for _, kind := range []effect.Kind{effect.Derived, effect.Analytics} {
			ctx := t.Context()
			s := h.Open(t, nil)
			// The analytics sink dedupes by the id it is given: the key.
			var mu sync.Mutex
			sink := map[string]int{}
			key := "signup:u-1"
			ext := &recorder{fail: []error{unknown, failed}}
			call := func(ctx context.Context, args json.RawMessage) (string, error) {
				mu.Lock()
				sink[key]++
				mu.Unlock()
				return ext.call(ctx, args)
			}
			run := effect.Intent{Tenant: "default", Key: key, Kind: kind, Args: map[string]string{"plan": "pro"}}
			if e, err := effect.For(s).Do(ctx, run, call); !errors.Is(err, effect.ErrOutcomeUnknown) || e.State != effect.Unknown {
				t.Fatalf("%s: %+v %v", kind, e, err)
			}
			if e, err := effect.For(s).Do(ctx, run, call); !errors.Is(err, failed) || e.State != effect.Failed {
				t.Fatalf("%s: UNKNOWN not run again: %+v %v", kind, e, err)
			}
			e, err := effect.For(s).Do(ctx, run, call)
			if err != nil || e.State != effect.Completed || e.Attempts != 3 {
				t.Fatalf("%s: FAILED not run again: %+v %v", kind, e, err)
			}
			if _, err := effect.For(s).Do(ctx, run, call); err != nil || len(ext.calls()) != 3 || len(sink) != 1 {
				t.Errorf("%s: completed ran again: %v, %d calls, sink %v", kind, err, len(ext.calls()), sink)
			}
			for _, a := range ext.calls() {
				if a != `{"plan":"pro"}` {
					t.Errorf("%s: call got %s", kind, a)
				}
			}
		}
	})
	t.Run("external runs FAILED again, UNKNOWN only after reconciling", func(t *testing.T) {
		ctx := t.Context()
		s := h.Open(t, nil)
		ext := &recorder{fail: []error{failed, unknown}}
		run := effect.Intent{Tenant: "default", Key: "email:u-1", Args: map[string]string{"to": "u1@example.com"}}
		if _, err := effect.For(s).Do(ctx, run, ext.call); !errors.Is(err, failed) {
			t.Fatal(err)
		}
		if e, err := effect.For(s).Do(ctx, run, ext.call); !errors.Is(err, effect.ErrOutcomeUnknown) || e.State != effect.Unknown {
			t.Fatalf("FAILED not retried: %+v %v", e, err)
		}
		var se *effect.StateError
		if _, err := effect.For(s).Do(ctx, run, ext.call); !errors.As(err, &se) || se.State != effect.Unknown || len(ext.calls()) != 2 {
			t.Fatalf("UNKNOWN retried blindly: %v (%d calls)", err, len(ext.calls()))
		}
		if _, err := effect.For(s).Reconcile(ctx, time.Now(), func(context.Context, effect.Effect) (effect.Happened, string, error) {
			return effect.DidNotHappen, "", nil
		}); err != nil {
			t.Fatal(err)
		}
		e, err := effect.For(s).Do(ctx, run, ext.call)
		if err != nil || e.State != effect.Completed || len(ext.calls()) != 3 {
			t.Fatalf("after a confirmed miss: %+v %v", e, err)
		}
		for _, a := range ext.calls() {
			if a != `{"to":"u1@example.com"}` {
				t.Errorf("retry got %s, want the stored arguments", a)
			}
		}
	})
	t.Run("permission checks before every attempt", func(t *testing.T) {
		ctx := t.Context()
		s := h.Open(t, nil)
		ext := &recorder{fail: []error{failed}}
		denied := errors.New("user u-1 lost the admin role")
		var allowed atomic.Bool
		var checks atomic.Int32
		run := effect.Intent{Tenant: "default", Key: "grant:u-1", Kind: effect.Permission, Resource: "account/u-1",
			Args: map[string]string{"role": "billing"}, Check: func(ctx context.Context, e effect.Effect) error {
				checks.Add(1)
				if e.Key != "grant:u-1" || string(e.Args) != `{"role":"billing"}` {
					t.Errorf("check got %+v", e)
				}
				if !allowed.Load() {
					return denied
				}
				return nil
			}}
		e, err := effect.For(s).Do(ctx, run, ext.call)
		var pe *effect.PermissionError
		if !errors.As(err, &pe) || !errors.Is(err, denied) || e.State != effect.Reserved || len(ext.calls()) != 0 {
			t.Fatalf("denied: %+v %v", e, err)
		}
		before := MustGetEffect(t, s, "default", "grant:u-1")
		if _, err := effect.For(s).Do(ctx, run, ext.call); !errors.As(err, &pe) {
			t.Fatal(err)
		}
		if after := MustGetEffect(t, s, "default", "grant:u-1"); !after.UpdatedAt.Equal(before.UpdatedAt) || after.Attempts != 0 {
			t.Errorf("a denied attempt changed the effect: %+v", after)
		}
		allowed.Store(true)
		if _, err := effect.For(s).Do(ctx, run, ext.call); !errors.Is(err, failed) {
			t.Fatal(err)
		}
		// The permission is checked again before the retry.
		allowed.Store(false)
		if e, err := effect.For(s).Do(ctx, run, ext.call); !errors.As(err, &pe) || e.State != effect.Failed || len(ext.calls()) != 1 {
			t.Fatalf("retry without permission: %+v %v", e, err)
		}
		allowed.Store(true)
		if e, err := effect.For(s).Do(ctx, run, ext.call); err != nil || e.State != effect.Completed {
			t.Fatalf("%+v %v", e, err)
		}
		if checks.Load() != 5 {
			t.Errorf("%d checks, want one before each of 5 attempts", checks.Load())
		}
		run.Check = nil
		if _, err := effect.For(s).Do(ctx, run, ext.call); !errors.Is(err, store.ErrInvalidEvent) {
			t.Errorf("a permission effect without a Check: %v", err)
		}
	})
	t.Run("irreversible goes back to a person after a failure or a confirmed miss", func(t *testing.T) {
		ctx := t.Context()
		s := h.Open(t, nil)
		ext := &recorder{fail: []error{failed, unknown}}
		run := effect.Intent{Tenant: "default", Key: "delete:acct-9", Kind: effect.Irreversible, Resource: "account/acct-9",
			Summary: "delete account acct-9 and its data", RequestedBy: "gdpr-worker", Args: map[string]string{"account": "acct-9"}}
		if _, err := effect.For(s).Do(ctx, run, ext.call); !errors.Is(err, store.ErrInvalidEvent) {
			t.Fatalf("irreversible without approval: %v", err)
		}
		run.NeedsApproval = true
		e, _ := effect.For(s).Do(ctx, run, ext.call)
		approve := func(by string) {
			t.Helper()
			if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "delete:acct-9", ArgsHash: e.ArgsHash(), By: by}); err != nil {
				t.Fatal(err)
			}
		}
		approve("alice")
		f, err := effect.For(s).Do(ctx, run, ext.call)
		if !errors.Is(err, failed) || f.State != effect.AwaitingApproval || f.DecidedBy != "" || !f.DecidedAt.IsZero() || f.LastError == "" {
			t.Fatalf("failed attempt: %+v %v", f, err)
		}
		if _, err := effect.For(s).Do(ctx, run, ext.call); !errors.Is(err, effect.ErrAwaitingApproval) || len(ext.calls()) != 1 {
			t.Fatalf("ran again without a new approval: %v (%d calls)", err, len(ext.calls()))
		}
		approve("bob")
		if u, err := effect.For(s).Do(ctx, run, ext.call); !errors.Is(err, effect.ErrOutcomeUnknown) || u.State != effect.Unknown {
			t.Fatalf("%+v %v", u, err)
		}
		if _, err := effect.For(s).Reconcile(ctx, time.Now(), func(context.Context, effect.Effect) (effect.Happened, string, error) {
			return effect.DidNotHappen, "", nil
		}); err != nil {
			t.Fatal(err)
		}
		if got := MustGetEffect(t, s, "default", "delete:acct-9"); got.State != effect.AwaitingApproval || got.DecidedBy != "" {
			t.Fatalf("after reconciliation said it did not happen: %+v", got)
		}
		approve("carol")
		d, err := effect.For(s).Do(ctx, run, ext.call)
		if err != nil || d.State != effect.Completed || d.DecidedBy != "carol" || len(ext.calls()) != 3 {
			t.Fatalf("%+v %v (%d calls)", d, err, len(ext.calls()))
		}
	})
}

// An approval older than ApprovalValidFor sends the effect back to a
// person.
func testEffectApprovalExpires(t *testing.T, h Harness) {
	ctx := t.Context()
	clock := NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := h.Open(t, &store.Options{Now: clock.Now})
	ext := &recorder{}
	run := refundRun("refund:o-6", refund{Order: "o-6", Amount: 7})
	run.ApprovalValidFor = time.Hour
	e, _ := effect.For(s).Do(ctx, run, ext.call)
	if e.ApprovalValidFor != time.Hour {
		t.Errorf("validity %v", e.ApprovalValidFor)
	}
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-6", ArgsHash: e.ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour + time.Second)
	back, err := effect.For(s).Do(ctx, run, ext.call)
	if !errors.Is(err, effect.ErrAwaitingApproval) || back.State != effect.AwaitingApproval || back.DecidedBy != "" ||
		!back.RequestedAt.Equal(clock.Now()) || len(ext.calls()) != 0 {
		t.Fatalf("expired approval: %+v %v (%d calls)", back, err, len(ext.calls()))
	}
	// ResumeApproved does not run an expired approval either.
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-6", ArgsHash: e.ArgsHash(), By: "bob"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	res, err := effect.For(s).ResumeApproved(ctx, "default", func(ctx context.Context, e effect.Effect, args json.RawMessage) (string, error) {
		return ext.call(ctx, args)
	})
	if err != nil || len(res) != 1 || res[0].State != effect.AwaitingApproval || len(ext.calls()) != 0 {
		t.Fatalf("resume of an expired approval: %+v %v", res, err)
	}
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-6", ArgsHash: e.ArgsHash(), By: "carol"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute)
	if d, err := effect.For(s).Do(ctx, run, ext.call); err != nil || d.State != effect.Completed || d.DecidedBy != "carol" {
		t.Fatalf("fresh approval: %+v %v", d, err)
	}
}

// The process that would run an approved effect dies before running it:
// the next one runs it, once, through ResumeApproved, with the stored
// arguments.
func testEffectResumeApprovedAfterCrash(t *testing.T, h Harness) {
	ctx := t.Context()
	first := h.Open(t, nil)
	ext := &recorder{}
	keys := []string{"refund:a", "refund:b"}
	for i, key := range keys {
		e, _ := effect.For(first).Do(ctx, refundRun(key, refund{Order: key, Amount: i + 1}), ext.call)
		if _, err := effect.For(first).Approve(ctx, effect.Approval{Tenant: "default", Key: key, ArgsHash: e.ArgsHash(), By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	// One still waits for a person, one is a permission effect (its Check
	// is the application's: Do runs it), one is another tenant's.
	if _, err := effect.For(first).Do(ctx, refundRun("refund:c", refund{Order: "c"}), ext.call); !errors.Is(err, effect.ErrAwaitingApproval) {
		t.Fatal(err)
	}
	perm := refundRun("grant:p", map[string]int{"n": 1})
	perm.Kind, perm.Check = effect.Permission, func(context.Context, effect.Effect) error { return nil }
	p, _ := effect.For(first).Do(ctx, perm, ext.call)
	if _, err := effect.For(first).Approve(ctx, effect.Approval{Tenant: "default", Key: "grant:p", ArgsHash: p.ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	other := refundRun("refund:a", refund{Order: "x"})
	other.Tenant = "acme"
	o, _ := effect.For(first).Do(ctx, other, ext.call)
	if _, err := effect.For(first).Approve(ctx, effect.Approval{Tenant: "acme", Key: "refund:a", ArgsHash: o.ArgsHash(), By: "zed"}); err != nil {
		t.Fatal(err)
	}
	// The crash: the process goes away between approval and execution.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	s := h.reopen(t, first, nil)
	resume := func() ([]effect.Effect, error) {
		return effect.For(s).ResumeApproved(ctx, "default", func(ctx context.Context, e effect.Effect, args json.RawMessage) (string, error) {
			if string(args) != string(e.Args) {
				t.Errorf("%s: args %s, stored %s", e.Key, args, e.Args)
			}
			return ext.call(ctx, args)
		})
	}
	res, err := resume()
	if err != nil || len(res) != 2 {
		t.Fatalf("resume: %+v %v", res, err)
	}
	for i, e := range res {
		if e.State != effect.Completed || e.Key != keys[i] {
			t.Errorf("resumed %+v", e)
		}
	}
	want := []string{`{"amount":1,"note":"","order":"refund:a"}`, `{"amount":2,"note":"","order":"refund:b"}`}
	if got := ext.calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	if res, err := resume(); err != nil || len(res) != 0 || len(ext.calls()) != 2 {
		t.Errorf("second resume: %+v %v (%d calls)", res, err, len(ext.calls()))
	}
	for key, want := range map[string]effect.State{"refund:c": effect.AwaitingApproval, "grant:p": effect.Approved} {
		if got := MustGetEffect(t, s, "default", key); got.State != want {
			t.Errorf("%s: %s, want %s", key, got.State, want)
		}
	}
	if got := MustGetEffect(t, s, "acme", "refund:a"); got.State != effect.Approved {
		t.Errorf("another tenant's effect: %s", got.State)
	}
}

// Bad input is refused with the field and reason, and stores nothing.
func testEffectInputRefused(t *testing.T, h Harness) {
	ctx := t.Context()
	s := h.Open(t, nil)
	ok := refundRun("k", refund{})
	cases := map[string]func(r *effect.Intent){
		"unknown kind":           func(r *effect.Intent) { r.Kind = "email" },
		"no requester":           func(r *effect.Intent) { r.RequestedBy = "" },
		"control in summary":     func(r *effect.Intent) { r.Summary = "refund\x1b[31m" },
		"newline in requester":   func(r *effect.Intent) { r.RequestedBy = "bot\nadmin" },
		"invalid UTF-8 resource": func(r *effect.Intent) { r.Resource = "order/\xff" },
		"padded summary":         func(r *effect.Intent) { r.Summary = " refund" },
		"long summary":           func(r *effect.Intent) { r.Summary = strings.Repeat("x", 1025) },
		"args over 64 KiB": func(r *effect.Intent) {
			r.Args = map[string]string{"x": strings.Repeat("a", effect.MaxArgsBytes)}
		},
		"duplicate member":         func(r *effect.Intent) { r.Args = json.RawMessage(`{"amount":1,"amount":2}`) },
		"not JSON":                 func(r *effect.Intent) { r.Args = json.RawMessage(`{amount:1}`) },
		"number beyond a double":   func(r *effect.Intent) { r.Args = json.RawMessage(`{"amount":1e999}`) },
		"not encodable":            func(r *effect.Intent) { r.Args = map[string]any{"c": make(chan int)} },
		"negative validity":        func(r *effect.Intent) { r.ApprovalValidFor = -time.Second },
		"empty key":                func(r *effect.Intent) { r.Key = "" },
		"bad tenant":               func(r *effect.Intent) { r.Tenant = "a b" },
		"irreversible unapproved":  func(r *effect.Intent) { r.Kind, r.NeedsApproval = effect.Irreversible, false },
		"permission without check": func(r *effect.Intent) { r.Kind = effect.Permission },
	}
	for name, change := range cases {
		r := ok
		change(&r)
		_, err := effect.For(s).Do(ctx, r, (&recorder{}).call)
		if !errors.Is(err, store.ErrInvalidEvent) && !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("%s: %v, want invalid input", name, err)
		}
	}
	if got, err := effect.For(s).List(ctx, effect.Filter{}); err != nil || len(got) != 0 {
		t.Errorf("refused runs stored %+v %v", got, err)
	}
	e, _ := effect.For(s).Do(ctx, ok, (&recorder{}).call)
	for name, decide := range map[string]func() error{
		"approve without name": func() error {
			_, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "k", ArgsHash: e.ArgsHash(), By: ""})
			return err
		},
		"approve control name": func() error {
			_, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "k", ArgsHash: e.ArgsHash(), By: "al\x00ice"})
			return err
		},
		"reject newline reason": func() error {
			_, err := effect.For(s).Reject(ctx, effect.Rejection{Tenant: "default", Key: "k", Reason: "no\nway", By: "bob"})
			return err
		},
		"reject invalid UTF-8": func() error {
			_, err := effect.For(s).Reject(ctx, effect.Rejection{Tenant: "default", Key: "k", Reason: "\xc3", By: "bob"})
			return err
		},
	} {
		if err := decide(); !errors.Is(err, store.ErrInvalidEvent) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := MustGetEffect(t, s, "default", "k"); got.State != effect.AwaitingApproval || got.DecidedBy != "" {
		t.Errorf("refused decisions changed %+v", got)
	}
}

// Doctor finds effects waiting too long for a person, and approved ones
// nothing ran.
func testEffectDoctorFindings(t *testing.T, h Harness) {
	ctx := t.Context()
	clock := NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := h.Open(t, &store.Options{Now: clock.Now})
	ext := &recorder{}
	ask := func(tenant, key string) effect.Effect {
		r := refundRun(key, refund{Order: key})
		r.Tenant = tenant
		e, _ := effect.For(s).Do(ctx, r, ext.call)
		return e
	}
	ask("default", "refund:old")
	ask("acme", "refund:older")
	oldApproved := ask("default", "refund:approved-old")
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:approved-old", ArgsHash: oldApproved.ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(23 * time.Hour)
	ask("default", "refund:young")
	young := ask("default", "refund:approved-young")
	clock.Advance(2 * time.Hour)
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:approved-young", ArgsHash: young.ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Minute)
	fs, err := s.Diagnose(ctx, store.DiagnoseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := Problems(fs)
	aw := got["effects_awaiting_approval"]
	if aw.Count != 2 || strings.Join(aw.IDs, ",") != "default:refund:old,acme:refund:older" && strings.Join(aw.IDs, ",") != "acme:refund:older,default:refund:old" {
		t.Errorf("awaiting: %+v", aw)
	}
	if want := (25*time.Hour + 30*time.Minute).Seconds(); aw.OldestAgeSeconds != want {
		t.Errorf("oldest awaiting %v s, want %v", aw.OldestAgeSeconds, want)
	}
	ap := got["effects_approved_not_run"]
	if ap.Count != 1 || ap.IDs[0] != "default:refund:approved-old" || ap.OldestAgeSeconds != (25*time.Hour+30*time.Minute).Seconds() {
		t.Errorf("approved not run: %+v", ap)
	}
	// Tighter bounds count the younger ones too; a decision clears them.
	fs, _ = s.Diagnose(ctx, store.DiagnoseOptions{ApprovalAge: 20 * time.Minute, ApprovedAge: 20 * time.Minute})
	got = Problems(fs)
	if got["effects_awaiting_approval"].Count != 3 || got["effects_approved_not_run"].Count != 2 {
		t.Errorf("tight bounds: %+v %+v", got["effects_awaiting_approval"], got["effects_approved_not_run"])
	}
	if _, err := effect.For(s).Reject(ctx, effect.Rejection{Tenant: "default", Key: "refund:old", Reason: "duplicate", By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := effect.For(s).ResumeApproved(ctx, "default", func(ctx context.Context, e effect.Effect, args json.RawMessage) (string, error) {
		return ext.call(ctx, args)
	}); err != nil {
		t.Fatal(err)
	}
	fs, _ = s.Diagnose(ctx, store.DiagnoseOptions{})
	got = Problems(fs)
	if got["effects_awaiting_approval"].Count != 1 || got["effects_approved_not_run"].Count != 0 {
		t.Errorf("after decisions: %+v %+v", got["effects_awaiting_approval"], got["effects_approved_not_run"])
	}
}

// Many runs of an approved effect at once: one call; the others find it
// running or done.
func testEffectApprovedRunsOnceUnderConcurrency(t *testing.T, h Harness) {
	ctx := t.Context()
	s := h.Open(t, nil)
	ext := &recorder{}
	run := refundRun("refund:o-9", refund{Order: "o-9", Amount: 3})
	e, _ := effect.For(s).Do(ctx, run, ext.call)
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-9", ArgsHash: e.ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			e, err := effect.For(s).Do(ctx, run, ext.call)
			if err != nil && !errors.Is(err, effect.ErrState) {
				t.Error(err)
			}
			if err == nil && e.State != effect.Completed {
				t.Errorf("%+v", e)
			}
		})
	}
	wg.Go(func() {
		<-start
		if _, err := effect.For(s).ResumeApproved(ctx, "default", func(ctx context.Context, e effect.Effect, args json.RawMessage) (string, error) {
			return ext.call(ctx, args)
		}); err != nil {
			t.Error(err)
		}
	})
	close(start)
	wg.Wait()
	if n := len(ext.calls()); n != 1 {
		t.Errorf("the approved effect ran %d times", n)
	}
}
