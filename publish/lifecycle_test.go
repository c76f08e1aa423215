package publish_test

import (
	"context"
	"testing"

	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestRelayPublishesLifecycleEvents: the relay publishes a tombstone and
// a truncate like any other event, in stream order; once published, a
// scavenge may remove what they allow.
func TestRelayPublishesLifecycleEvents(t *testing.T) {
	ctx := context.Background()
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	appendEvents(t, s, "default", "order-1", 4)
	appendEvents(t, s, "default", "order-2", 3)
	if _, err := lifecycle.For(s).Truncate(ctx, "default", "order-1", 3, store.Any); err != nil {
		t.Fatal(err)
	}
	if _, err := lifecycle.For(s).Delete(ctx, "default", "order-2", lifecycle.DeleteOptions{Hard: true, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	r := newRelay(t, publish.Options{Store: s, Publisher: newNATS(t, srv.URL(), natsjs.Options{}), Once: true})
	if err := r.Run(ctx); err != nil {
		t.Fatalf("run: %v", err)
	}
	checkBroker(t, srv, s)
	types := map[string]int{}
	for _, m := range srv.Messages(t, natsjs.DefaultStream) {
		types[decodeNATS(t, m).Type]++
	}
	if types[lifecycle.TypeStreamTruncated] != 1 || types[lifecycle.TypeStreamDeleted] != 1 {
		t.Fatalf("published types %v: want one truncate and one tombstone", types)
	}
	res, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{})
	if err != nil || res.Removed != 2+3 || len(res.HeldBack) != 0 {
		t.Fatalf("scavenge after the relay: removed %d, held %+v (%v)", res.Removed, res.HeldBack, err)
	}
}
