package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStreams(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	checkInvariants(t, db)
	mustRun(t, events(2), "append", "order-10", "--db", db)
	mustRun(t, "", "append", "order-9", "--type", "t", "--db", db)
	mustRun(t, "", "append", "elsewhere", "--type", "t", "--tenant", "acme", "--db", db)

	t.Run("--json", func(t *testing.T) {
		r := mustRun(t, "", "streams", "--json", "--db", db)
		var got []map[string]any
		for _, line := range lines(r.stdout) {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			updated, err := time.Parse(time.RFC3339, m["updated"].(string))
			if err != nil || updated.Location() != time.UTC || !strings.HasSuffix(m["updated"].(string), "Z") {
				t.Errorf("updated %q is not RFC 3339 UTC (%v)", m["updated"], err)
			}
			delete(m, "updated")
			got = append(got, m)
		}
		want := []map[string]any{
			{"tenant": "default", "stream": "order-10", "version": float64(2)},
			{"tenant": "default", "stream": "order-9", "version": float64(1)},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("streams --json (-want +got):\n%s", diff)
		}
	})
	t.Run("--json --tenant", func(t *testing.T) {
		r := mustRun(t, "", "streams", "--json", "--tenant", "acme", "--db", db)
		var got streamOutput
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		if got.Tenant != "acme" || got.Stream != "elsewhere" || got.Version != 1 {
			t.Errorf("streams --tenant acme = %+v", got)
		}
	})
	t.Run("table", func(t *testing.T) {
		r := mustRun(t, "", "streams", "--db", db)
		ls := lines(r.stdout)
		if len(ls) != 3 {
			t.Fatalf("got %d lines, want a header and 2 rows:\n%s", len(ls), r.stdout)
		}
		var cols [][]string
		for _, l := range ls {
			cols = append(cols, strings.Fields(l))
		}
		if diff := cmp.Diff([]string{"STREAM", "VERSION", "UPDATED"}, cols[0]); diff != "" {
			t.Errorf("header (-want +got):\n%s", diff)
		}
		if cols[1][0] != "order-10" || cols[1][1] != "2" || cols[2][0] != "order-9" || cols[2][1] != "1" {
			t.Errorf("rows:\n%s", r.stdout)
		}
		// Aligned: every row's columns start where the header's do.
		vcol, ucol := strings.Index(ls[0], "VERSION"), strings.Index(ls[0], "UPDATED")
		for _, l := range ls[1:] {
			if len(l) <= ucol || l[vcol-1] != ' ' || l[vcol] == ' ' || l[ucol-1] != ' ' || l[ucol] == ' ' {
				t.Errorf("row %q is not aligned with %q", l, ls[0])
			}
			if _, err := time.Parse(time.RFC3339, strings.Fields(l)[2]); err != nil {
				t.Errorf("updated: %v", err)
			}
		}
	})
	t.Run("none", func(t *testing.T) {
		r := mustRun(t, "", "streams", "--tenant", "nobody", "--db", db)
		if r.stdout != "no streams (tenant nobody)\n" {
			t.Errorf("stdout = %q", r.stdout)
		}
		if r = mustRun(t, "", "streams", "--json", "--tenant", "nobody", "--db", db); r.stdout != "" {
			t.Errorf("--json stdout = %q, want nothing", r.stdout)
		}
	})
}

// TestHostileStreamIDs: stream ids that look like SQL or LIKE patterns are
// stored and read back byte for byte; ids the store refuses are invalid
// input and store nothing.
func TestHostileStreamIDs(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	checkInvariants(t, db)
	stored := []string{"'; DROP TABLE events;--", "%", "_", `a"b\c`, "ünïcödé ✓"}
	for _, id := range stored {
		t.Run(id, func(t *testing.T) {
			r := mustRun(t, "", "append", "--db", db, "--json", "--type", "t", "--", id)
			var res appendOutput
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Stream != id || res.Version != 1 {
				t.Errorf("append printed %q (%v)", r.stdout, err)
			}
			evs := decodeLines(t, mustRun(t, "", "read", id, "--db", db).stdout)
			if len(evs) != 1 || evs[0].Stream != id {
				t.Fatalf("read %q: %+v", id, evs)
			}
		})
	}
	r := mustRun(t, "", "streams", "--json", "--db", db)
	var got []string
	for _, line := range lines(r.stdout) {
		var so streamOutput
		if err := json.Unmarshal([]byte(line), &so); err != nil {
			t.Fatal(err)
		}
		got = append(got, so.Stream)
	}
	want := []string{"%", "'; DROP TABLE events;--", "_", `a"b\c`, "ünïcödé ✓"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("streams (-want +got):\n%s", diff)
	}

	refused := []struct {
		name, id string
	}{
		{"NUL", "a\x00b"},
		{"10 KB", strings.Repeat("x", 10<<10)},
		{"empty", ""},
		{"leading white space", " a"},
		{"invalid UTF-8", "a\xffb"},
		{"tab", "tab\there"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			for _, args := range [][]string{
				{"append", "--type", "t", "--db", db, "--", tt.id},
				{"read", "--db", db, "--", tt.id},
			} {
				r := run(t, "", args...)
				if r.code != exitInvalid || !strings.Contains(r.stderr, "stream") {
					t.Errorf("%s: exit %d, want %d; stderr:\n%s", args[0], r.code, exitInvalid, r.stderr)
				}
			}
			if r := run(t, `{"specversion":"1.0","id":"x","source":"x","type":"t"}`, "append", "--db", db, "--", tt.id); r.code != exitInvalid {
				t.Errorf("append from stdin: exit %d, want %d; stderr:\n%s", r.code, exitInvalid, r.stderr)
			}
		})
	}
	if r := mustRun(t, "", "tail", "--db", db); len(lines(r.stdout)) != len(stored) {
		t.Errorf("the log holds %d events, want %d:\n%s", len(lines(r.stdout)), len(stored), r.stdout)
	}
}
