package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutboxQueryPlans checks that the relay's queries read the partial
// indexes of pending and failing rows, never the whole outbox: a long log
// of published rows must cost the relay nothing.
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
	if !strings.Contains(p, "outbox_pending") || !strings.Contains(p, "outbox_failing") {
		t.Errorf("relay read does not use the pending and failing indexes:\n%s", p)
	}
	if strings.Contains(p, "SCAN o\n") || strings.Contains(p, "SCAN outbox") || strings.Contains(p, "SCAN e\n") {
		t.Errorf("relay read scans a table:\n%s", p)
	}
	p = plan(`SELECT min(next_attempt_at) FROM outbox
		WHERE published_at IS NULL AND discarded_at IS NULL AND attempts > 0 AND dead_at IS NULL`)
	if !strings.Contains(p, "outbox_failing") {
		t.Errorf("next attempt does not use the failing index:\n%s", p)
	}
	p = plan(markPublishedQuery, 0, 0, "[[1,2]]")
	if !strings.Contains(p, "SEARCH outbox USING INTEGER PRIMARY KEY") {
		t.Errorf("mark published does not look rows up by position:\n%s", p)
	}
	p = plan(selectDeadLetters)
	if !strings.Contains(p, "outbox_failing") {
		t.Errorf("dead letters do not use the failing index:\n%s", p)
	}
}
