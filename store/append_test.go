package store_test

import (
	"context"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
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
