package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRetentionCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	mustRun(t, "", "migrate", "--db", db)
	// Bad input: exit 2 (or 5), and nothing stored.
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"retention", "set", "cart-", "--max-age", "-1h"}, exitUsage},
		{[]string{"retention", "set", "cart-", "--max-age", "0s"}, exitUsage},
		{[]string{"retention", "set", "cart-", "--max-age", "0d"}, exitUsage},
		{[]string{"retention", "set", "cart-", "--max-count", "0"}, exitUsage},
		{[]string{"retention", "set", "cart-", "--max-count", "-3"}, exitUsage},
		{[]string{"retention", "set", "cart-"}, exitUsage},
		{[]string{"retention", "set", "--max-count", "3"}, exitUsage},
		{[]string{"retention", "unset"}, exitUsage},
		{[]string{"retention", "frob"}, exitUsage},
		{[]string{"retention", "list", "--max-count", "3"}, exitUsage},
		{[]string{"retention", "unset", "nope-"}, exitNotFound},
	} {
		r := run(t, "", append(tc.args, "--db", db)...)
		if r.code != tc.code || !strings.Contains(r.stderr, "eventlite") {
			t.Errorf("eventlite %q: exit %d, want %d; stderr:\n%s", tc.args, r.code, tc.code, r.stderr)
		}
	}
	if out := mustRun(t, "", "retention", "--json", "--db", db).stdout; out != "" {
		t.Fatalf("refused commands stored a policy: %s", out)
	}
	mustRun(t, "", "retention", "set", "cart-", "--max-age", "30d", "--max-count", "100", "--db", db)
	mustRun(t, "", "retention", "set", "log-", "--max-age", "90m", "--db", db)
	lines := jsonLines(t, mustRun(t, "", "retention", "--json", "--db", db).stdout)
	if len(lines) != 2 || lines[0]["prefix"] != "cart-" || lines[0]["max_age"] != "720h0m0s" || lines[0]["max_count"] != float64(100) ||
		lines[1]["max_age_seconds"] != float64(5400) || lines[1]["max_count"] != nil {
		t.Fatalf("retention --json: %v", lines)
	}
	if out := mustRun(t, "", "retention", "--db", db).stdout; !strings.Contains(out, `"cart-"`) || !strings.Contains(out, "720h0m0s") {
		t.Fatalf("retention list:\n%s", out)
	}
	mustRun(t, "", "retention", "unset", "log-", "--db", db)
	if lines := jsonLines(t, mustRun(t, "", "retention", "list", "--json", "--db", db).stdout); len(lines) != 1 {
		t.Fatalf("after unset: %v", lines)
	}
}

func TestScavengeCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for range 5 {
		mustRun(t, "", "append", "cart-1", "--type", "t", "--db", db)
	}
	for range 3 {
		mustRun(t, "", "append", "order-1", "--type", "t", "--db", db)
	}
	mustRun(t, "", "delete", "order-1", "--db", db)
	mustRun(t, "", "retention", "set", "cart-", "--max-count", "2", "--db", db)
	if r := run(t, "", "scavenge", "--dry-run", "--vacuum", "--db", db); r.code != exitUsage {
		t.Fatalf("--dry-run --vacuum: exit %d", r.code)
	}
	// Nothing published yet: the outbox holds everything back.
	r := mustRun(t, "", "scavenge", "--json", "--db", db)
	var out scavengeOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("scavenge --json %q: %v", r.stdout, err)
	}
	// The policy truncates cart-1 before 4 at once (its truncate event
	// is version 6).
	if out.Removed != 0 || len(out.HeldBack) == 0 || out.HeldBack[0].By != "outbox" || len(out.Trims) != 1 || out.Trims[0].Before != 4 || out.Trims[0].Version != 6 {
		t.Fatalf("unpublished: %+v", out)
	}
	mustRun(t, "", "relay", "--to", "stdout", "--once", "--db", db)

	before := mustRun(t, "", "tail", "--db", db).stdout
	r = mustRun(t, "", "scavenge", "--dry-run", "--db", db)
	if !strings.Contains(r.stdout, `would remove "order-1" (tenant default) versions 1 to 3 (3 events)`) ||
		!strings.Contains(r.stdout, "would remove 6 events from 2 streams; changed nothing") {
		t.Fatalf("dry run:\n%s", r.stdout)
	}
	if after := mustRun(t, "", "tail", "--db", db).stdout; after != before {
		t.Fatal("a dry run changed the log")
	}
	mustRun(t, "", "relay", "--to", "stdout", "--once", "--db", db)
	r = mustRun(t, "", "scavenge", "--json", "--db", db)
	out = scavengeOutput{}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	// cart-1: 3 events go; order-1: 3 go, its tombstone stays.
	if out.Removed != 6 || len(out.Trims) != 0 || len(out.Ranges) != 2 || out.Ranges[0].From != "1" || out.Ranges[0].To != "3" {
		t.Fatalf("scavenge: %s", r.stdout)
	}
	if r := run(t, "", "read", "order-1", "--db", db); r.code != exitNotFound {
		t.Fatalf("deleted stream read after scavenge: exit %d", r.code)
	}
	if got := versions(decodeLines(t, mustRun(t, "", "read", "cart-1", "--db", db).stdout)); len(got) != 3 || got[0] != 4 {
		t.Fatalf("cart-1 after scavenge: versions %v, want 4..6", got)
	}
	r = mustRun(t, "", "scavenge", "--vacuum", "--db", db)
	if !strings.Contains(r.stdout, "removed 0 events") {
		t.Fatalf("second scavenge:\n%s", r.stdout)
	}
	if r := mustRun(t, "", "doctor", "--db", db); strings.Contains(r.stdout, "position_holes ") {
		t.Fatalf("doctor after scavenge:\n%s", r.stdout)
	}
}

// jsonLines decodes JSON Lines into maps.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var ms []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		ms = append(ms, m)
	}
	return ms
}
