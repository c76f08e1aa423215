package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	real := filepath.Join(dir, "real.db")
	// $EVENTLITE_DB is ignored: the demo never writes into a real store.
	r := runWith(t, t.Context(), map[string]string{"EVENTLITE_DB": real}, "", "demo")
	if r.code != exitOK {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(real); !os.IsNotExist(err) {
		t.Errorf("the demo touched $EVENTLITE_DB: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, demoDefaultDB)); err != nil {
		t.Fatalf("no %s: %v", demoDefaultDB, err)
	}
	for _, want := range []string{
		"refused, the stream is at version 2",
		"answered from the ledger=true",
		"one cancellation",
		"relay published 6 events",
		"deferred (a version before it is missing",
		"1 deferred successor(s) from the buffer",
		"duplicate (seen before",
		"0 still deferred",
		"watermark: position",
		"the email went out 1 time(s)",
		"healthy:",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the demo's account lacks %q:\n%s", want, r.stdout)
		}
	}
	// The database is left to explore, and doctor finds it healthy.
	db := filepath.Join(dir, demoDefaultDB)
	if got := decodeLines(t, mustRun(t, "", "read", "order-1", "--db", db).stdout); len(got) != 4 {
		t.Errorf("order-1 has %d events", len(got))
	}
	if rep, r := doctorJSON(t, "--db", db); r.code != exitOK || !rep.Healthy || len(rep.Findings) != 0 {
		t.Errorf("doctor after the demo: exit %d %+v", r.code, rep)
	}
	checkInvariants(t, db)
	// A rerun replaces the demo's own database.
	if r := run(t, "", "demo"); r.code != exitOK {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	// Any other file is refused, untouched.
	other := filepath.Join(dir, "mine.db")
	mustRun(t, "", "append", "keep", "--type", "t", "--db", other)
	before, _ := os.ReadFile(other)
	r = run(t, "", "demo", "--db", other)
	if r.code != exitUsage || !strings.Contains(r.stderr, "not created by eventlite demo") {
		t.Errorf("demo over a foreign file: exit %d, %s", r.code, r.stderr)
	}
	after, _ := os.ReadFile(other)
	if string(before) != string(after) {
		t.Error("the refused demo changed the file")
	}
}
