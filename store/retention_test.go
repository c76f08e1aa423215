package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

func TestRetentionPolicies(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	l := s.Lifecycle()
	for _, p := range []store.RetentionPolicy{
		{Prefix: "cart-", MaxCount: 2},
		{Prefix: "cart-vip-", MaxAge: time.Hour},
	} {
		if err := l.SetRetention(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Replacing a policy replaces both limits.
	if err := l.SetRetention(ctx, store.RetentionPolicy{Prefix: "cart-", MaxCount: 3}); err != nil {
		t.Fatal(err)
	}
	got, err := l.Retention(ctx)
	if err != nil || len(got) != 2 || got[0].Prefix != "cart-" || got[0].MaxCount != 3 || got[0].MaxAge != 0 || got[1].MaxAge != time.Hour {
		t.Fatalf("policies: %+v (%v)", got, err)
	}
	if err := l.UnsetRetention(ctx, "cart-vip-"); err != nil {
		t.Fatal(err)
	}
	if err := l.UnsetRetention(ctx, "cart-vip-"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unset of a prefix without a policy: %v, want ErrNotFound", err)
	}
}

func TestRetentionRefusesBadPolicies(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	for _, p := range []store.RetentionPolicy{
		{Prefix: "a", MaxAge: -time.Second},
		{Prefix: "a", MaxCount: -1},
		{Prefix: "a"},
	} {
		err := s.Lifecycle().SetRetention(ctx, p)
		var ie *envelope.InvalidError
		if !errors.As(err, &ie) || ie.Field == "" || ie.Reason == "" {
			t.Errorf("SetRetention(%+v) = %v, want an *envelope.InvalidError naming the field", p, err)
		}
	}
	if got, _ := s.Lifecycle().Retention(ctx); len(got) != 0 {
		t.Fatalf("a refused policy was stored: %+v", got)
	}
}

func TestRetentionMaxCountTrimsAndLongestPrefixWins(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	fillStream(t, s, "cart-1", 5)
	fillStream(t, s, "cart-vip-1", 5)
	fillStream(t, s, "order-1", 5)
	// A truncate's own event does not count toward max count.
	if _, err := s.Lifecycle().Truncate(ctx, "default", "cart-1", 2, store.Any); err != nil {
		t.Fatal(err)
	}
	for _, p := range []store.RetentionPolicy{{Prefix: "cart-", MaxCount: 2}, {Prefix: "cart-vip-", MaxCount: 4}} {
		if err := s.Lifecycle().SetRetention(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	storetest.PublishAll(t, s)
	res := scavenge(t, s, store.ScavengeOptions{})
	want := map[string]int64{"cart-1": 4, "cart-vip-1": 2}
	if len(res.Trims) != 2 {
		t.Fatalf("trims %+v, want cart-1 before 4 and cart-vip-1 before 2", res.Trims)
	}
	for _, tr := range res.Trims {
		if want[tr.Stream] != tr.Before || tr.Version == 0 {
			t.Errorf("trim %+v, want before %d and the truncate's version", tr, want[tr.Stream])
		}
	}
	// cart-1: versions 1..3 go, 4 and 5 stay, plus the two truncate events.
	evs, err := readErr(s, "cart-1")
	if err != nil || len(evs) != 4 || evs[0].StreamVersion != 4 || evs[3].Type != store.TypeStreamTruncated {
		t.Fatalf("cart-1 after retention: %d events %v", len(evs), err)
	}
	var tr store.StreamTruncated
	if err := json.Unmarshal(evs[3].Data, &tr); err != nil || tr.Before != 4 {
		t.Fatalf("truncate event %s", evs[3].Data)
	}
	if res.Removed != 3+1 {
		t.Fatalf("removed %d, want 4 (cart-1's 1..3, cart-vip-1's 1)", res.Removed)
	}
	// Stable: a second scavenge trims nothing more.
	storetest.PublishAll(t, s)
	if res := scavenge(t, s, store.ScavengeOptions{}); len(res.Trims) != 0 || res.Removed != 0 {
		t.Fatalf("second scavenge: trims %+v, removed %d", res.Trims, res.Removed)
	}
}

func TestRetentionMaxAgeKeepsTheNewestEvent(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	s := storetest.MustOpen(t, &store.Options{Now: clock})
	fillStream(t, s, "log-a", 3) // recorded at day 0
	now.Add(int64(48 * time.Hour))
	fillStream(t, s, "log-a", 2) // day 2
	fillStream(t, s, "log-b", 2) // day 2, all expired by day 10
	if err := s.Lifecycle().SetRetention(ctx, store.RetentionPolicy{Prefix: "log-", MaxAge: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	now.Add(int64(23 * time.Hour)) // log-a's first three are older than a day, the rest younger
	storetest.PublishAll(t, s)
	res := scavenge(t, s, store.ScavengeOptions{})
	if res.Removed != 3 {
		t.Fatalf("day 3: removed %d, want 3 (%+v)", res.Removed, res.Trims)
	}
	now.Add(int64(7 * 24 * time.Hour)) // everything expired
	storetest.PublishAll(t, s)
	res = scavenge(t, s, store.ScavengeOptions{})
	for _, st := range []string{"log-a", "log-b"} {
		evs, err := readErr(s, st)
		if err != nil || len(evs) < 2 || evs[0].Type != "t" || evs[len(evs)-1].Type != store.TypeStreamTruncated {
			t.Fatalf("%s when all expired: %d events (%v): want its newest event, then truncates", st, len(evs), err)
		}
		for _, e := range evs[1:] {
			if e.Type == "t" {
				t.Fatalf("%s when all expired: more than its newest event stays: %+v", st, evs)
			}
		}
	}
	storetest.PublishAll(t, s)
	if res := scavenge(t, s, store.ScavengeOptions{}); len(res.Trims) != 0 {
		t.Fatalf("a scavenge of expired streams trims again: %+v", res.Trims)
	}
}
