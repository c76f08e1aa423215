package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutboxQueryPlans checks that the relay's queries read events by
// position from the relay's cursor on and the partial index of failing
// rows, never the whole log or outbox: a long log of published events
// must cost the relay nothing, also while a stream is parked.
func TestOutboxQueryPlans(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), &Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Give the planner statistics that look like a long, published log.
	if _, err := s.rdb.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := s.rdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			b.WriteString(detail + "\n")
		}
		return b.String()
	}
	p := plan(readOutboxQuery, 0, 0, 10)
	t.Logf("relay read plan:\n%s", p)
	// The events from the cursor on (the start is a scalar subquery on
	// the watermark, evaluated once), their rows by key, the held streams
	// from the failing index.
	for _, want := range []string{"SEARCH e USING INTEGER PRIMARY KEY (rowid>?)", "SEARCH o USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN", "outbox_failing"} {
		if !strings.Contains(p, want) {
			t.Errorf("relay read plan lacks %q:\n%s", want, p)
		}
	}
	if scansLog(p) {
		t.Errorf("relay read scans a table:\n%s", p)
	}
	// Moving W and C: from the watermark on, by position; the failing
	// streams from the failing index.
	for name, q := range map[string]string{"advance settled": advanceSettledQuery, "advance scanned": advanceScannedQuery} {
		p := plan(q, 0, 10)
		t.Logf("%s plan:\n%s", name, p)
		if !strings.Contains(p, "SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)") || scansLog(p) {
			t.Errorf("%s does not read events by position range:\n%s", name, p)
		}
		if name == "advance scanned" && !strings.Contains(p, "outbox_failing") {
			t.Errorf("%s does not read failing rows from their index:\n%s", name, p)
		}
	}
	// The pending events (stats, doctor): above the cursor by position,
	// below it through the failing streams' own index.
	p = plan(pendingCTE + ` SELECT count(*), min(position) FROM pending`)
	t.Logf("pending plan:\n%s", p)
	for _, want := range []string{"SEARCH e USING INTEGER PRIMARY KEY (rowid>?)", "outbox_failing",
		"sqlite_autoindex_events_1 (tenant=? AND stream_id=? AND version>?)"} {
		if !strings.Contains(p, want) {
			t.Errorf("pending plan lacks %q:\n%s", want, p)
		}
	}
	if scansLog(p) {
		t.Errorf("pending scans a table:\n%s", p)
	}
	p = plan(`SELECT min(next_attempt_at) FROM outbox
		WHERE published_at IS NULL AND discarded_at IS NULL AND attempts > 0 AND dead_at IS NULL`)
	if !strings.Contains(p, "outbox_failing") {
		t.Errorf("next attempt does not use the failing index:\n%s", p)
	}
	p = plan(markPublishedQuery, 0, 0, "[[1,2]]")
	if !strings.Contains(p, "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)") || scansLog(p) {
		t.Errorf("mark published does not look events up by position:\n%s", p)
	}
	p = plan(selectDeadLetters)
	if !strings.Contains(p, "outbox_failing") {
		t.Errorf("dead letters do not use the failing index:\n%s", p)
	}
}

// scansLog reports whether a plan scans the events or the outbox: the
// one-row watermark, the JSON of a batch and small materialized sets
// (the failing streams, the pending co-routine) may be scanned.
func scansLog(plan string) bool {
	for _, l := range strings.Split(plan, "\n") {
		switch {
		case !strings.HasPrefix(l, "SCAN "):
		case l == "SCAN outbox_watermark", l == "SCAN w", l == "SCAN mark", l == "SCAN t", l == "SCAN pending",
			strings.HasPrefix(l, "SCAN j VIRTUAL TABLE"), strings.HasSuffix(l, "USING INDEX outbox_failing"):
		default:
			return true
		}
	}
	return false
}
