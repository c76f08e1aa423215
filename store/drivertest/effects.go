package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store/effect"
)

func testEffectAtMostOnce(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	var calls atomic.Int32
	send := func(ctx context.Context) (string, error) {
		calls.Add(1)
		return "msg-123", nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			e, err := effect.For(s).Run(ctx, "default", "welcome-email:user-1", send)
			// Concurrent callers may meet the first one mid-call: refused,
			// never a second call.
			if err != nil && !errors.Is(err, effect.ErrState) {
				t.Error(err)
			}
			if err == nil && (e.State != effect.Completed || e.ProviderRef != "msg-123") {
				t.Errorf("effect %+v", e)
			}
		})
	}
	wg.Wait()
	if _, err := effect.For(s).Run(ctx, "default", "welcome-email:user-1", send); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("the external call ran %d times", calls.Load())
	}
	// Keys never cross tenants.
	if _, err := effect.For(s).Run(ctx, "other", "welcome-email:user-1", send); err != nil || calls.Load() != 2 {
		t.Errorf("other tenant: %v, calls %d", err, calls.Load())
	}
	// A second reserve returns the existing row.
	e, created, err := effect.Steps(inside.Key{}, effect.For(s)).Reserve(ctx, "default", "welcome-email:user-1")
	if err != nil || created || e.State != effect.Completed || e.Attempts != 1 {
		t.Errorf("second reserve: %+v created=%v %v", e, created, err)
	}
}

func testEffectUnknownIsReconciledNotRetried(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	var calls atomic.Int32
	timeout := func(ctx context.Context) (string, error) {
		calls.Add(1)
		return "", fmt.Errorf("charge card: %w: gateway timed out after sending", effect.ErrOutcomeUnknown)
	}
	e, err := effect.For(s).Run(ctx, "default", "charge:order-9", timeout)
	if !errors.Is(err, effect.ErrOutcomeUnknown) || e.State != effect.Unknown {
		t.Fatalf("timeout: %+v %v", e, err)
	}
	// Never retried blindly.
	_, err = effect.For(s).Run(ctx, "default", "charge:order-9", timeout)
	var se *effect.StateError
	if !errors.As(err, &se) || se.State != effect.Unknown || calls.Load() != 1 {
		t.Fatalf("retry of an unknown effect: %v (calls %d)", err, calls.Load())
	}
	if _, err := effect.Steps(inside.Key{}, effect.For(s)).Begin(ctx, "default", "charge:order-9"); !errors.Is(err, effect.ErrState) {
		t.Fatalf("begin on unknown: %v", err)
	}
	// The provider is not sure yet: stays unknown.
	res, err := effect.For(s).Reconcile(ctx, time.Now(), func(ctx context.Context, e effect.Effect) (effect.Happened, string, error) {
		return effect.NotSure, "", nil
	})
	if err != nil || res.StillUnknown != 1 {
		t.Fatalf("reconcile: %+v %v", res, err)
	}
	// Confirmed "did not happen": the same key may be retried, once.
	res, err = effect.For(s).Reconcile(ctx, time.Now(), func(ctx context.Context, e effect.Effect) (effect.Happened, string, error) {
		if e.Key != "charge:order-9" {
			t.Errorf("checked %q", e.Key)
		}
		return effect.DidNotHappen, "", nil
	})
	if err != nil || res.Failed != 1 {
		t.Fatalf("reconcile: %+v %v", res, err)
	}
	e, err = effect.For(s).Run(ctx, "default", "charge:order-9", func(ctx context.Context) (string, error) {
		calls.Add(1)
		return "ch_42", nil
	})
	if err != nil || e.State != effect.Completed || e.Attempts != 2 || calls.Load() != 2 {
		t.Errorf("retry after a confirmed miss: %+v %v calls %d", e, err, calls.Load())
	}
	if _, err := effect.For(s).Compensate(ctx, "default", "charge:order-9"); err != nil {
		t.Errorf("compensate: %v", err)
	}
}

func testEffectReconcileStuckExecuting(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	if _, _, err := effect.Steps(inside.Key{}, effect.For(s)).Reserve(ctx, "default", "call-partner"); err != nil {
		t.Fatal(err)
	}
	if _, err := effect.Steps(inside.Key{}, effect.For(s)).Begin(ctx, "default", "call-partner"); err != nil {
		t.Fatal(err)
	}
	// The worker died mid-call. A recent attempt is left alone...
	res, err := effect.For(s).Reconcile(ctx, time.Now().Add(-time.Hour), func(ctx context.Context, e effect.Effect) (effect.Happened, string, error) {
		t.Error("checked an attempt that may still be running")
		return effect.NotSure, "", nil
	})
	if err != nil || res.Checked != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	// ...a stuck one is checked; the provider has it.
	res, err = effect.For(s).Reconcile(ctx, time.Now().Add(time.Second), func(ctx context.Context, e effect.Effect) (effect.Happened, string, error) {
		return effect.DidHappen, "partner-77", nil
	})
	if err != nil || res.Completed != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	e, _, _ := effect.For(s).Get(ctx, "default", "call-partner")
	if e.State != effect.Completed || e.ProviderRef != "partner-77" {
		t.Errorf("%+v", e)
	}
}
