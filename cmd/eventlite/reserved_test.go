package main

import (
	"strings"
	"testing"
)

// The store's own streams cannot be deleted, truncated, appended to or
// given a retention policy from the CLI: exit 4, saying why, nothing
// changed (today `delete eventlite-forgotten --hard` exited 0 and every
// later forget in the tenant exited 4).
func TestOwnStreamsRefusedByCLI(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	mustRun(t, "", "append", "s", "--type", "t", "--db", db)
	for _, args := range [][]string{
		{"delete", "eventlite-forgotten", "--hard"},
		{"delete", "eventlite-forgotten"},
		{"truncate", "eventlite-forgotten", "--before", "2"},
		{"append", "eventlite-forgotten", "--type", "t"},
		{"append", "eventlite-mine", "--type", "t"},
		{"retention", "set", "eventlite-", "--max-count", "1"},
	} {
		r := run(t, "", append(args, "--db", db)...)
		if r.code != exitInvalid || !strings.Contains(r.stderr, "store's own") {
			t.Errorf("%q: exit %d, stderr %q; want 4 saying the stream is the store's own", args, r.code, r.stderr)
		}
	}
	if r := mustRun(t, "", "tail", "--db", db); len(lines(r.stdout)) != 1 {
		t.Errorf("the refusals changed the log:\n%s", r.stdout)
	}
	if r := mustRun(t, "", "retention", "--db", db); strings.Contains(r.stdout, "eventlite-") {
		t.Errorf("a policy for the store's own streams was stored:\n%s", r.stdout)
	}
}
