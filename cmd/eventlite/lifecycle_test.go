package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestDeleteAndTruncate(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for range 4 {
		mustRun(t, "", "append", "a", "--type", "t", "--db", db)
	}
	mustRun(t, "", "append", "b", "--type", "t", "--db", db)
	mustRun(t, "", "append", "h", "--type", "t", "--db", db)

	// Bad input: an exit code, and nothing changes.
	before := mustRun(t, "", "tail", "--db", db).stdout
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		ctx  context.Context
		args []string
		code int
	}{
		{nil, []string{"delete", "nope"}, exitNotFound},
		{nil, []string{"truncate", "nope", "--before", "2"}, exitNotFound},
		{nil, []string{"truncate", "a", "--before", "5"}, exitInvalid},
		{nil, []string{"truncate", "a", "--before", "1"}, exitInvalid},
		{nil, []string{"truncate", "a"}, exitUsage},
		{nil, []string{"truncate", "a", "--before", "x"}, exitUsage},
		{nil, []string{"delete"}, exitUsage},
		{nil, []string{"delete", "a", "--hard=maybe"}, exitUsage},
		{cancelled, []string{"delete", "a"}, exitIncomplete},
	} {
		ctx := tc.ctx
		if ctx == nil {
			ctx = t.Context()
		}
		r := runWith(t, ctx, nil, "", append(tc.args, "--db", db)...)
		if r.code != tc.code {
			t.Errorf("eventlite %q: exit %d, want %d; stderr:\n%s", tc.args, r.code, tc.code, r.stderr)
		}
	}
	if after := mustRun(t, "", "tail", "--db", db).stdout; after != before {
		t.Fatalf("refused commands changed the log:\nbefore %s\nafter %s", before, after)
	}

	r := mustRun(t, "", "truncate", "a", "--before", "3", "--json", "--db", db)
	var out appendOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Version != 5 {
		t.Fatalf("truncate output %q (%v), want version 5", r.stdout, err)
	}
	if got := versions(decodeLines(t, mustRun(t, "", "read", "a", "--db", db).stdout)); len(got) != 3 || got[0] != 3 {
		t.Fatalf("read after truncate: versions %v, want 3..5", got)
	}

	mustRun(t, "", "delete", "b", "--reason", "gdpr request", "--db", db)
	if r := run(t, "", "read", "b", "--db", db); r.code != exitNotFound {
		t.Fatalf("read of a deleted stream: exit %d, want 5", r.code)
	}
	if r := run(t, "", "delete", "b", "--db", db); r.code != exitNotFound {
		t.Fatalf("delete of a deleted stream: exit %d, want 5", r.code)
	}
	if r := run(t, "", "append", "b", "--type", "t", "--expected", "exists", "--db", db); r.code != exitConflict {
		t.Fatalf("append exists to a deleted stream: exit %d, want 3", r.code)
	}
	r = mustRun(t, "", "append", "b", "--type", "t", "--expected", "no-stream", "--json", "--db", db)
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Version != 3 {
		t.Fatalf("no-stream append after a tombstone at 2: %q, want version 3", r.stdout)
	}
	tomb := decodeLines(t, mustRun(t, "", "tail", "--db", db).stdout)
	var found bool
	for _, e := range tomb {
		if e.Type == "eventlite.stream.deleted" && e.Stream == "b" {
			found = strings.Contains(string(e.Data), `"reason":"gdpr request"`)
		}
	}
	if !found {
		t.Fatal("tail shows no tombstone with the reason")
	}

	mustRun(t, "", "delete", "h", "--hard", "--db", db)
	for _, args := range [][]string{{"read", "h"}, {"append", "h", "--type", "t"}, {"delete", "h"}, {"delete", "h", "--hard"}, {"truncate", "h", "--before", "2"}} {
		if r := run(t, "", append(args, "--db", db)...); r.code != exitInvalid {
			t.Errorf("eventlite %q on a hard-deleted stream: exit %d, want 4; stderr:\n%s", args, r.code, r.stderr)
		}
	}
	checkInvariants(t, db)
}

// TestDeleteReasonRule: delete --reason follows the attribute rule: a
// control character (CR, LF and tab included), invalid UTF-8 or edge
// white space exits 4 naming --reason, and the stream stays as it was;
// the reason is never rewritten (U+FFFD) nor kept with its line breaks.
func TestDeleteReasonRule(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	mustRun(t, "", "append", "a", "--type", "t", "--db", db)
	before := mustRun(t, "", "tail", "--db", db).stdout
	for _, reason := range []string{"line\nbreak", "carriage\rreturn", "tab\there", "bad \xff utf-8", "nul\x00", " edge", "c1 \u0085"} {
		r := run(t, "", "delete", "a", "--reason", reason, "--db", db)
		if r.code != exitInvalid || !strings.Contains(r.stderr, "--reason") {
			t.Errorf("delete --reason %q: exit %d, want 4 naming --reason; stderr:\n%s", reason, r.code, r.stderr)
		}
	}
	if after := mustRun(t, "", "tail", "--db", db).stdout; after != before {
		t.Fatalf("refused deletes changed the log:\nbefore %s\nafter %s", before, after)
	}
	mustRun(t, "", "delete", "a", "--reason", "gdpr: ticket 12 (Zoë)", "--db", db)
}
