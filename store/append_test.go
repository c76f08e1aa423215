package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

func ev(t testing.TB, typ string, data any) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, data)
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/test"
	return e
}

func evID(t testing.TB, id, typ string, data any) envelope.Event {
	e := ev(t, typ, data)
	e.ID = id
	return e
}

func readStream(t testing.TB, s *store.Store, tenant, stream string) []envelope.Event {
	t.Helper()
	var out []envelope.Event
	for e, err := range s.ReadStream(context.Background(), tenant, stream, store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatalf("read %s: %v", stream, err)
		}
		out = append(out, e)
	}
	return out
}

func TestAppendReadBack(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	in := evID(t, "e-1", "order.placed", map[string]any{"total": 42})
	in.Data = []byte("{\n  \"total\": 42\n}")
	in.CorrelationID, in.CausationID = "corr", "cause"
	in.Extensions = map[string]any{"traceparent": "00-abc", "n": int32(7), "ok": true}
	res, err := s.Append(ctx, "acme", "order-1", store.NoStream, in)
	if err != nil {
		t.Fatal(err)
	}
	got := readStream(t, s, "acme", "order-1")
	if len(got) != 1 {
		t.Fatalf("read %d events", len(got))
	}
	want := res.Events[0]
	if string(want.Data) != `{"total":42}` {
		t.Errorf("data not compacted: %s", want.Data)
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("read back (-appended +read):\n%s", diff)
	}
	if got[0].Tenant != "acme" || got[0].Stream != "order-1" || got[0].Position != 1 || got[0].StreamVersion != 1 {
		t.Errorf("store fields: %+v", got[0])
	}
}

func TestTenantsIsolated(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	// The same id and stream in two tenants are two independent events.
	a, err := s.Append(ctx, "tenant-a", "s", store.NoStream, evID(t, "same", "t", "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Append(ctx, "tenant-b", "s", store.NoStream, evID(t, "same", "t", "b"))
	if err != nil {
		t.Fatalf("same id in another tenant: %v", err)
	}
	if a.FirstPosition() == b.FirstPosition() {
		t.Error("tenants share an event")
	}
	if got := readStream(t, s, "tenant-a", "s"); len(got) != 1 || string(got[0].Data) != `"a"` {
		t.Errorf("tenant-a sees %v", got)
	}
	var n int
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: "tenant-b"}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Tenant != "tenant-b" {
			t.Errorf("tenant-b read sees %s's event", e.Tenant)
		}
		n++
	}
	if n != 1 {
		t.Errorf("tenant-b read %d events", n)
	}
	if _, err := s.Append(ctx, "tenant a", "s", store.Any, ev(t, "t", 1)); !errors.Is(err, store.ErrInvalidEvent) {
		t.Errorf("bad tenant name: %v", err)
	}
}
