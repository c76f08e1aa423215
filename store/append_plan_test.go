package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestAppendQueryPlans checks that every statement of an append, and the
// reads of a stream and of the log, find their rows through a key or an
// index, never by scanning a table: an append into a long log must cost
// what it costs in a short one. The plans are logged (go test -v) for
// the record.
func TestAppendQueryPlans(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), &Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.rdb.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		query string
		args  []any
		want  []string // each must appear in the plan
	}{
		// The append's one read: the stream's row, its newest version
		// (the last entry of its range in the (tenant, stream_id, version)
		// index), the head (the last rowid) and the floor's one row.
		{"stream state and last position", streamStateSQL, []any{"t", "s"},
			[]string{"SEARCH streams USING PRIMARY KEY (tenant=? AND stream_id=?)",
				"SEARCH events USING COVERING INDEX sqlite_autoindex_events_1 (tenant=? AND stream_id=?)",
				"SEARCH position_floor USING INTEGER PRIMARY KEY (rowid=?)",
				"SEARCH removed_event_ids USING PRIMARY KEY (tenant=?)"}},
		{"create a stream", createStreamSQL, []any{"t", "s", 0},
			nil}, // an INSERT ... VALUES: no scan at all
		{"revive a soft-deleted stream", reviveStreamSQL, []any{"t", "s"},
			[]string{"SEARCH streams USING PRIMARY KEY (tenant=? AND stream_id=?)"}},
		// The foreign key of outbox rows makes each new event look up
		// outbox rows that would reference it: a key lookup.
		{"insert events", insertEventsSQL(2, 0), make([]any, insertEventsArgs(2, 0)),
			[]string{"SEARCH outbox USING INTEGER PRIMARY KEY (rowid=?)"}},
		{"insert events sharing their source, time...", insertEventsSQL(2, sharedAll), make([]any, insertEventsArgs(2, sharedAll)),
			[]string{"SEARCH outbox USING INTEGER PRIMARY KEY (rowid=?)"}},
		{"stream version", streamVersionSQL, []any{"t", "s"},
			[]string{"SEARCH s USING PRIMARY KEY (tenant=? AND stream_id=?)",
				"SEARCH e USING COVERING INDEX sqlite_autoindex_events_1 (tenant=? AND stream_id=?)"}},
		{"event by id (retries)", eventByIDSQL, []any{"t", "id"},
			[]string{"SEARCH events USING INDEX sqlite_autoindex_events_2 (tenant=? AND event_id=?)"}},
		{"removed id (while a scavenge removed some)", idRemovedSQL, []any{"t", "id"},
			[]string{"SEARCH removed_event_ids USING PRIMARY KEY (tenant=? AND event_id=?)"}},
		{"read a stream", selectStreamEvents + ` WHERE tenant = ? AND stream_id = ? AND version >= ? ORDER BY version LIMIT ?`, []any{"t", "s", 1, 10},
			[]string{"SEARCH events USING INDEX sqlite_autoindex_events_1 (tenant=? AND stream_id=? AND version>?)"}},
		// A stream's version and updated time come from its newest event.
		{"list streams (a page)", streamsPageSQL(">"), []any{"t", "", 10},
			[]string{"SEARCH s USING PRIMARY KEY (tenant=? AND stream_id>?)",
				"SEARCH n USING INDEX sqlite_autoindex_events_1 (tenant=? AND stream_id=? AND version=?)",
				// The versions a restore took back: a primary key lookup.
				"SEARCH g USING PRIMARY KEY (tenant=? AND stream_id=?"}},
		{"read the log", selectEvents + ` WHERE position >= ? ORDER BY position LIMIT ?`, []any{1, 10},
			[]string{"SEARCH events USING INTEGER PRIMARY KEY (rowid>?)"}},
	}
	for _, tc := range tests {
		rows, err := s.rdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+tc.query, tc.args...)
		if err != nil {
			t.Fatalf("%s: explain: %v", tc.name, err)
		}
		var b strings.Builder
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			b.WriteString(detail + "\n")
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		p := b.String()
		t.Logf("%s:\n%s", tc.name, p)
		if scansTable(p) {
			t.Errorf("%s scans a table:\n%s", tc.name, p)
		}
		if strings.Contains(p, "USE TEMP B-TREE") {
			t.Errorf("%s sorts its rows:\n%s", tc.name, p)
		}
		for _, w := range tc.want {
			if !strings.Contains(p, w) {
				t.Errorf("%s: plan lacks %q:\n%s", tc.name, w, p)
			}
		}
	}
}

// scansTable reports whether a plan scans a table or an index (a scan of
// an INSERT's own VALUES rows, or of the one row of a SELECT without
// FROM, is not one).
func scansTable(plan string) bool {
	for _, l := range strings.Split(plan, "\n") {
		if strings.HasPrefix(l, "SCAN ") && !strings.HasSuffix(l, "-ROW VALUES CLAUSE") && l != "SCAN CONSTANT ROW" {
			return true
		}
	}
	return false
}
