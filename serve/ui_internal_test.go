package serve

import (
	"net/http"
	"testing"
	"time"
)

// The sessions kept are bounded per token: past MaxSessionsPerToken the
// token's oldest is dropped, another token's never; and a removed session
// is worth nothing.
func TestSessionsBounded(t *testing.T) {
	var ss sessions
	other, err := ss.create(0)
	if err != nil {
		t.Fatal(err)
	}
	first, err := ss.create(1)
	if err != nil {
		t.Fatal(err)
	}
	for range MaxSessionsPerToken {
		if _, err := ss.create(1); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ss.m); n != MaxSessionsPerToken+1 {
		t.Fatalf("%d sessions kept, want %d", n, MaxSessionsPerToken+1)
	}
	r, _ := http.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: SessionCookie, Value: first})
	if _, ok := ss.lookup(r); ok {
		t.Fatal("the token's oldest session survived the bound")
	}
	r, _ = http.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: SessionCookie, Value: other})
	if i, ok := ss.lookup(r); !ok || i != 0 {
		t.Fatalf("another token's session was dropped: %d, %v", i, ok)
	}
	last, _ := ss.create(1)
	r, _ = http.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: SessionCookie, Value: last})
	if i, ok := ss.lookup(r); !ok || i != 1 {
		t.Fatalf("the newest session: %d, %v", i, ok)
	}
	ss.remove(r)
	if _, ok := ss.lookup(r); ok {
		t.Fatal("a removed session still works")
	}
}

// A session lasts SessionTTL from its creation and not a moment longer,
// and when the bound is reached every expired session is pruned before a
// live one would be dropped.
func TestSessionExpires(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ss := sessions{now: func() time.Time { return now }}
	id, err := ss.create(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss.create(1); err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: SessionCookie, Value: id})
	now = now.Add(SessionTTL - time.Nanosecond)
	if i, ok := ss.lookup(r); !ok || i != 1 {
		t.Fatalf("just before its expiry the session answers %d, %v", i, ok)
	}
	now = now.Add(time.Nanosecond)
	if _, ok := ss.lookup(r); ok {
		t.Fatal("the session still works at its expiry")
	}
	// Two expired sessions and MaxSessionsPerToken-2 live ones of the
	// token fill its bound; the next session prunes both expired ones and
	// drops no live one.
	var live []string
	for range MaxSessionsPerToken - 2 {
		id, err := ss.create(1)
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, id)
	}
	if _, err := ss.create(1); err != nil {
		t.Fatal(err)
	}
	if n := len(ss.m); n != MaxSessionsPerToken-1 {
		t.Fatalf("%d sessions kept, want %d: the expired ones were not pruned", n, MaxSessionsPerToken-1)
	}
	for _, id := range live {
		r, _ := http.NewRequest("GET", "/", nil)
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: id})
		if _, ok := ss.lookup(r); !ok {
			t.Fatal("a live session was dropped")
		}
	}
}
