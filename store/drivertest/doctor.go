package drivertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// Problems keeps the findings of severity problem, by kind.
func Problems(fs []store.Finding) map[string]store.Finding {
	out := map[string]store.Finding{}
	for _, f := range fs {
		if f.Severity == store.SeverityProblem {
			out[f.Kind] = f
		}
	}
	return out
}

// Diagnose runs the doctor with default options and logs how long it took.
func Diagnose(t *testing.T, s *store.Store) []store.Finding {
	t.Helper()
	start := time.Now()
	fs, err := s.Diagnose(context.Background(), store.DiagnoseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("diagnose took %s", time.Since(start))
	return fs
}

// AppendEvents appends n events to a stream of the default tenant in
// one append.
func AppendEvents(t testing.TB, s *store.Store, stream string, n int) store.AppendResult {
	t.Helper()
	evs := make([]envelope.Event, n)
	for i := range evs {
		evs[i] = Event(t, "t", map[string]int{"i": i})
	}
	res, err := s.Append(context.Background(), "default", stream, store.Any, evs...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func testDiagnoseFreshStore(t *testing.T, h Harness) {
	s := h.Open(t, nil)
	if fs := Diagnose(t, s); len(fs) != 0 {
		t.Errorf("an empty store has findings: %+v", fs)
	}
	AppendEvents(t, s, "order-1", 3)
	fs := Diagnose(t, s)
	if len(Problems(fs)) != 0 {
		t.Errorf("a fresh dev store where no relay ran has problems: %+v", fs)
	}
	if len(fs) != 1 || fs[0].Kind != "outbox_pending" || fs[0].Severity != store.SeverityInfo || fs[0].Count != 3 {
		t.Errorf("want one info finding for the pending outbox, got %+v", fs)
	}
}

// testDiagnoseCleanLargeStore: no false positive on 100,000 events (10,000
// under -short) where a relay ran and published everything.
func testDiagnoseCleanLargeStore(t *testing.T, h Harness) {
	ctx := context.Background()
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	s := h.Open(t, nil)
	for i := 0; i < n; i += 1000 {
		AppendEvents(t, s, fmt.Sprintf("stream-%d", i/1000%37), 1000)
	}
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "test-relay", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rows, err := outbox.For(s).Read(ctx, outbox.ReadOptions{Limit: 5000})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			break
		}
		pub := make([]outboxmark.Published, len(rows))
		for i, r := range rows {
			pub[i] = outboxmark.Published{Position: r.Event.Position}
		}
		if err := s.Update(ctx, func(tx *store.Tx) error {
			_, err := store.Bookkeeping(inside.Key{}, tx).MarkPublished(ctx, l, pub)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Inner(inside.Key{}, s).ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fs := Diagnose(t, s)
	t.Logf("scan of a clean %d-event store: %s", n, time.Since(start))
	if len(fs) != 0 {
		t.Errorf("false positives on a clean store: %+v", fs)
	}
}
