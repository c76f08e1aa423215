package command

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/eventlite/eventlite/internal/tracing"
)

var errMoved = errors.New("moved")

// With no TracerProvider set (otel's default global, or a noop
// provider), the attempt spans of aggregate and decision commands cost
// nothing: Attempts allocates nothing of its own, retries included.
func TestAttemptsTracingOffAllocatesNothing(t *testing.T) {
	for name, cfg := range map[string]tracing.Config{
		"global default": {},
		"noop provider":  {TP: noop.NewTracerProvider()},
	} {
		t.Run(name, func(t *testing.T) {
			o := Options{MaxAttempts: 3, Trace: cfg}
			if err := o.Defaults("test"); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			calls := 0
			attempt := func(context.Context) (int, error) {
				calls++
				if calls%2 == 1 {
					return 0, errMoved // the first attempt of each command is retried
				}
				return calls, nil
			}
			retry := func(err error) bool { return err == errMoved }
			moved := func(context.Context, int, error) {}
			n := testing.AllocsPerRun(100, func() {
				if _, err, exhausted := Attempts(ctx, &o, "id", retry, moved, attempt); err != nil || exhausted {
					t.Fatal(err, exhausted)
				}
			})
			if n != 0 {
				t.Fatalf("tracing off: %v allocations per command's attempts, want 0", n)
			}
		})
	}
}

// Attempts stops at the first outcome not to retry and reports when it
// ran out of attempts, with the last error.
func TestAttempts(t *testing.T) {
	o := Options{MaxAttempts: 3}
	if err := o.Defaults("test"); err != nil {
		t.Fatal(err)
	}
	var seen []int
	_, err, exhausted := Attempts(context.Background(), &o, "id", func(err error) bool { return errors.Is(err, errMoved) },
		func(_ context.Context, n int, _ error) { seen = append(seen, n) },
		func(context.Context) (int, error) { return 0, errMoved })
	if !exhausted || !errors.Is(err, errMoved) || len(seen) != 3 {
		t.Fatalf("exhausted %v, err %v, retries logged %v; want true, moved, 3", exhausted, err, seen)
	}
	other := errors.New("refused")
	calls := 0
	_, err, exhausted = Attempts(context.Background(), &o, "id", func(err error) bool { return errors.Is(err, errMoved) },
		func(context.Context, int, error) {},
		func(context.Context) (int, error) { calls++; return 0, other })
	if exhausted || err != other || calls != 1 {
		t.Fatalf("exhausted %v, err %v after %d calls; want false, refused, 1", exhausted, err, calls)
	}
	if err := (&Options{MaxAttempts: -1}).Defaults("aggregate x"); err == nil {
		t.Fatal("negative MaxAttempts accepted")
	}
}
