package serve

import (
	"net/http"
	"testing"
)

// The sessions kept are bounded: past maxSessions the oldest is dropped,
// and a removed session is worth nothing.
func TestSessionsBounded(t *testing.T) {
	var ss sessions
	first, err := ss.create(0)
	if err != nil {
		t.Fatal(err)
	}
	for range maxSessions {
		if _, err := ss.create(1); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ss.m); n != maxSessions {
		t.Fatalf("%d sessions kept, want %d", n, maxSessions)
	}
	r, _ := http.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: SessionCookie, Value: first})
	if _, ok := ss.lookup(r); ok {
		t.Fatal("the oldest session survived the bound")
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
