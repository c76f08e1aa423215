package projection_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestConsumerForgetsOutsideSubjects: a service that only received a
// subject's events (published in clear by another service, erasurekey
// in their attributes) forgets it: Forget keeps a tombstone (no key
// here), the deferral buffer's copy loses its data and tags, and a
// redelivered event of the subject is applied and stored without data
// or tags. Receiving
// eventlite.subject.forgotten does the same for another subject.
func TestConsumerForgetsOutsideSubjects(t *testing.T) {
	for _, engine := range []struct {
		name string
		open func(testing.TB) *store.Store
	}{
		{"sqlite", func(tb testing.TB) *store.Store { return storetest.MustOpen(tb, nil) }},
		{"postgres", openPostgres},
	} {
		t.Run(engine.name, func(t *testing.T) {
			testConsumerForgetsOutsideSubjects(t, engine.open(t))
		})
	}
}

func testConsumerForgetsOutsideSubjects(t *testing.T, s *store.Store) {
	ctx := context.Background()
	applied := map[string]envelope.Event{}
	c, err := projection.NewConsumer(s, projection.ConsumerOptions{Name: "profiles", Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
		applied[e.ID] = e
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	received := func(subject, stream string, version int64) envelope.Event {
		t.Helper()
		e, err := envelope.New("user.registered", map[string]string{"email": subject + ".secret@example.org"})
		if err != nil {
			t.Fatal(err)
		}
		e.ID = fmt.Sprintf("%s-%d", stream, version)
		e.Source, e.Stream, e.StreamVersion = "/upstream", stream, version
		// A tag that quotes the subject: erased with its data.
		e.Tags = []string{"username:" + subject + ".secret-name"}
		return e.WithErasureKey(subject)
	}
	handle := func(e envelope.Event, want projection.Outcome) {
		t.Helper()
		res, err := c.Handle(ctx, e)
		if err != nil || res.Outcome != want {
			t.Fatalf("handle %s v%d: %v, %v; want %v", e.Stream, e.StreamVersion, res.Outcome, err, want)
		}
	}
	noSecret := func(subject string) {
		t.Helper()
		deferred, err := projection.Consumers(s).Deferred(ctx, "profiles", time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range deferred {
			if strings.Contains(string(d.Event), subject+".secret") {
				t.Errorf("the deferral buffer keeps %s's data: %s", subject, d.Event)
			}
		}
	}

	// alice: forgotten here by the operator.
	a1, a2 := received("alice", "user-a", 1), received("alice", "user-a", 2)
	handle(a2, projection.Deferred)
	res, err := erasure.For(s).Forget(ctx, "default", "alice")
	if err != nil {
		t.Fatalf("forget a subject whose events were only received: %v", err)
	}
	if !res.Tombstone || res.Copies != 1 {
		t.Errorf("forget result %+v; want a tombstone and 1 copy erased", res)
	}
	noSecret("alice")
	handle(a1, projection.Applied) // redelivered after the forget; drains a2
	for _, e := range []envelope.Event{a1, a2} {
		got, ok := applied[e.ID]
		if !ok || got.Data != nil || !envelope.Erased(got) || len(got.Tags) > 0 {
			t.Errorf("alice's v%d applied as %s, tags %q (erased %v, applied %v); want no data, no tags, dataerased", e.StreamVersion, got.Data, got.Tags, envelope.Erased(got), ok)
		}
	}

	// bob: forgotten upstream; the consumer receives the event.
	b1, b2 := received("bob", "user-b", 1), received("bob", "user-b", 2)
	handle(b2, projection.Deferred)
	f, err := envelope.New(erasure.TypeSubjectForgotten, erasure.SubjectForgotten{ErasureKey: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	f.ID = "forgotten-bob"
	f.Source, f.Stream, f.StreamVersion = "/upstream", erasure.ForgottenStream, 1
	handle(f, projection.Applied)
	noSecret("bob")
	handle(b1, projection.Applied)
	for _, e := range []envelope.Event{b1, b2} {
		if got := applied[e.ID]; got.Data != nil || !envelope.Erased(got) || len(got.Tags) > 0 {
			t.Errorf("bob's v%d applied with data %s, tags %q after the forgotten event arrived", e.StreamVersion, got.Data, got.Tags)
		}
	}
	if v, err := s.StreamVersion(ctx, "default", erasure.ForgottenStream); err != nil || v != 2 {
		t.Errorf("local %s at version %d (%v); want 2: one forget each, so local read models purge too", erasure.ForgottenStream, v, err)
	}
}
