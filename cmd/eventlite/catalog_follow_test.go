package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// TestCatalogFollow: catalog --follow is a long-running projection runner:
// it keeps the catalog current and stops cleanly, releasing its lease.
func TestCatalogFollow(t *testing.T) {
	db := newDB(t)
	mustRun(t, "", "append", "a", "--type", "t", "--db", db)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan result, 1)
	go func() {
		done <- runWith(t, ctx, nil, "", "catalog", "--follow", "--db", db, "--metrics", "127.0.0.1:0")
	}()
	s, err := store.Open(t.Context(), db, &store.Options{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Append(t.Context(), "default", "b", store.Any, mustEvent(t))
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	if err := projection.WaitFor(wctx, s, projection.CatalogName, res.LastPosition()); err != nil {
		t.Fatalf("the follower did not keep the catalog current: %v", err)
	}
	st, err := projection.StatsFor(t.Context(), s, projection.CatalogName)
	if err != nil || st.Status != projection.StatusRunning {
		t.Errorf("while following: %+v %v", st, err)
	}
	cancel()
	r := <-done
	if r.code != exitOK || r.stdout != "" {
		t.Fatalf("catalog --follow: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if st, _ := projection.StatsFor(t.Context(), s, projection.CatalogName); st.Status != projection.StatusIdle {
		t.Errorf("after a clean stop the lease is released: %s", st.Status)
	}
	if r := run(t, "", "catalog", "--metrics", "127.0.0.1:0", "--db", db); r.code != exitUsage || !strings.Contains(r.stderr, "--follow") {
		t.Errorf("--metrics without --follow: exit %d %s", r.code, r.stderr)
	}
}

func mustEvent(t *testing.T) envelope.Event {
	t.Helper()
	e, err := envelope.New("t", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Source = "/test"
	return e
}
