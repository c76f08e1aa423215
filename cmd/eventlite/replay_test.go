package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// jsonObjects decodes every line of out as a JSON object.
func jsonObjects(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, l := range lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not a JSON object: %v", l, err)
		}
		objs = append(objs, m)
	}
	return objs
}

// catalogEvents appends a small log: two streams of the default tenant,
// one of acme.
func catalogEvents(t *testing.T, db string) {
	t.Helper()
	mustRun(t, "", "append", "order-1", "--type", "order.placed", "--db", db)
	mustRun(t, "", "append", "order-1", "--type", "order.paid", "--db", db)
	mustRun(t, "", "append", "order-1", "--type", "order.paid", "--db", db)
	mustRun(t, "", "append", "order-2", "--type", "order.placed", "--db", db)
	mustRun(t, "", "append", "elsewhere", "--type", "thing", "--tenant", "acme", "--db", db)
}

func TestReplayCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	catalogEvents(t, db)

	r := mustRun(t, "", "replay", "catalog", "--db", db)
	if !strings.HasPrefix(r.stdout, "replay catalog: rebuilt 5 events up to position 5 (watermark 5) in ") || !strings.HasSuffix(r.stdout, "verified, and swapped it in\n") {
		t.Errorf("replay stdout %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "replay catalog: done 5/5 events (100%)") {
		t.Errorf("no progress lines on stderr: %q", r.stderr)
	}

	r = mustRun(t, "", "replay", "--dry-run", "catalog", "--db", db)
	if !strings.HasPrefix(r.stdout, "replay catalog: no drift") {
		t.Errorf("dry run stdout %q", r.stdout)
	}

	r = mustRun(t, "", "replay", "catalog", "--json", "--db", db)
	objs := jsonObjects(t, r.stdout)
	for _, o := range objs[:len(objs)-1] {
		if _, ok := o["done"]; !ok {
			t.Errorf("progress object without done: %v", o)
		}
	}
	if last := objs[len(objs)-1]; last["swapped"] != true || last["checkpoint"] != "5" || last["applied"] != 5.0 {
		t.Errorf("summary %v", last)
	}

	// Damage the catalog: a dry run finds it and exits 6.
	s := storetest.MustOpenPath(t, db, nil)
	err := s.Update(t.Context(), func(tx *store.Tx) error {
		_, err := tx.ExecContext(t.Context(), `UPDATE catalog SET version = 9 WHERE stream = 'order-2'`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "replay", "catalog", "--dry-run", "--json", "--db", db)
	objs = jsonObjects(t, r.stdout)
	want := map[string]any{"drift": 1.0, "missing": 0.0, "extra": 0.0, "different": 1.0}
	got := map[string]any{}
	for k := range want {
		got[k] = objs[len(objs)-1][k]
	}
	if r.code != exitIncomplete || cmp.Diff(want, got) != "" || !strings.Contains(r.stderr, "the read model drifted") {
		t.Errorf("dry run of a damaged catalog: exit %d, summary %v, stderr %q", r.code, objs[len(objs)-1], r.stderr)
	}

	// Another replay is running: busy.
	l, err := store.Inner(inside.Key{}, s).AcquireLease(t.Context(), projection.RebuildLeaseResource("catalog"), "someone", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, "", "replay", "catalog", "--db", db); r.code != exitBusy || !strings.Contains(r.stderr, "another replay is running") {
		t.Errorf("while another replay runs: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := mustRun(t, "", "projections", "--db", db); !strings.Contains(r.stdout, "rebuilding") {
		t.Errorf("projections while a replay runs:\n%s", r.stdout)
	}
	if err := store.Inner(inside.Key{}, s).ReleaseLease(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "", "replay", "catalog", "--db", db)
	if r = run(t, "", "replay", "catalog", "--dry-run", "--db", db); r.code != exitOK {
		t.Errorf("after the replay the dry run finds drift: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestReplayCommandErrors(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	catalogEvents(t, db)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		args []string
		code int
		want string
	}{
		{"no name", t.Context(), []string{"replay"}, exitUsage, "replay takes 1 argument(s) (NAME)"},
		{"two names", t.Context(), []string{"replay", "a", "b"}, exitUsage, "replay takes 1 argument(s) (NAME)"},
		{"unknown flag", t.Context(), []string{"replay", "catalog", "--nope"}, exitUsage, "-nope"},
		{"unknown projection", t.Context(), []string{"replay", "nosuch"}, exitNotFound, `no such projection "nosuch" (there are: catalog): a binary replays only the projections it declares; replay an application's projections with the application's own binary, mounting replay/replaycmd with them in Config.Projections (docs/handler-sql.md, "Replaying an application's projections")`},
		{"interrupted", ctx, []string{"replay", "catalog"}, exitIncomplete, "canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runWith(t, c.ctx, nil, "", append(c.args, "--db", db)...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, c.code, c.want)
			}
		})
	}
}

func TestProjectionsCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	catalogEvents(t, db)
	if r := mustRun(t, "", "projections", "--db", db); r.stdout != "no projections\n" {
		t.Errorf("before any: %q", r.stdout)
	}
	mustRun(t, "", "catalog", "--db", db)
	mustRun(t, "", "append", "order-3", "--type", "order.placed", "--db", db)
	mustRun(t, "", "append", "order-3", "--type", "order.paid", "--db", db)
	r := mustRun(t, "", "projections", "--db", db)
	ls := lines(r.stdout)
	if len(ls) != 2 || strings.Join(strings.Fields(ls[0]), " ") != "NAME CHECKPOINT HEAD LAG STATUS" ||
		strings.Join(strings.Fields(ls[1]), " ") != "catalog 5 7 2 idle" {
		t.Errorf("projections:\n%s", r.stdout)
	}
	r = mustRun(t, "", "projections", "--json", "--db", db)
	want := []map[string]any{{"name": "catalog", "checkpoint": "5", "head": "7", "lag": 2.0, "status": "idle", "quarantined": 0.0}}
	if diff := cmp.Diff(want, jsonObjects(t, r.stdout)); diff != "" {
		t.Errorf("projections --json (-want +got):\n%s", diff)
	}
}

func TestCatalogCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	if r := mustRun(t, "", "catalog", "--db", db); r.stdout != "no streams (tenant default)\n" {
		t.Errorf("no database: %q", r.stdout)
	}
	catalogEvents(t, db)
	r := mustRun(t, "", "catalog", "--db", db)
	var rows []string
	for _, l := range lines(r.stdout) {
		f := strings.Fields(l)
		rows = append(rows, strings.Join(append(f[:3:3], f[5:]...), " ")) // without the times
	}
	want := []string{
		"TENANT STREAM VERSION EVENTS",
		"default order-1 3 order.paid=2 order.placed=1",
		"default order-2 1 order.placed=1",
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("catalog (-want +got):\n%s\n%s", diff, r.stdout)
	}

	// Current without a runner: brought up to date on every call.
	mustRun(t, "", "append", "order-2", "--type", "order.shipped", "--db", db)
	r = mustRun(t, "", "catalog", "--json", "--all-tenants", "--db", db)
	objs := jsonObjects(t, r.stdout)
	for _, o := range objs {
		for _, k := range []string{"first_time", "last_time"} {
			s, _ := o[k].(string)
			ts, err := time.Parse(time.RFC3339Nano, s)
			if err != nil || !strings.HasSuffix(s, "Z") || time.Since(ts) > time.Hour {
				t.Errorf("%s %q is not a recent RFC 3339 UTC time (%v)", k, s, err)
			}
			delete(o, k)
		}
	}
	wantJSON := []map[string]any{
		{"tenant": "acme", "stream": "elsewhere", "version": 1.0, "events_by_type": map[string]any{"thing": 1.0}},
		{"tenant": "default", "stream": "order-1", "version": 3.0, "events_by_type": map[string]any{"order.paid": 2.0, "order.placed": 1.0}},
		{"tenant": "default", "stream": "order-2", "version": 2.0, "events_by_type": map[string]any{"order.placed": 1.0, "order.shipped": 1.0}},
	}
	if diff := cmp.Diff(wantJSON, objs); diff != "" {
		t.Errorf("catalog --json --all-tenants (-want +got):\n%s", diff)
	}
	r = mustRun(t, "", "catalog", "--json", "--tenant", "acme", "--db", db)
	if objs := jsonObjects(t, r.stdout); len(objs) != 1 || objs[0]["stream"] != "elsewhere" {
		t.Errorf("catalog --tenant acme: %s", r.stdout)
	}

	// A runner holds the catalog: the command reads it as it is.
	s := storetest.MustOpenPath(t, db, nil)
	if _, err := store.Inner(inside.Key{}, s).AcquireLease(t.Context(), projection.LeaseResource("catalog"), "a-runner", time.Minute); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "append", "order-9", "--type", "order.placed", "--db", db)
	r = mustRun(t, "", "catalog", "--db", db)
	if strings.Contains(r.stdout, "order-9") || !strings.Contains(r.stdout, "order-2") {
		t.Errorf("with a runner holding the catalog, it is read as the runner keeps it:\n%s", r.stdout)
	}
	if r := mustRun(t, "", "streams", "--db", db); !strings.Contains(r.stdout, "order-9") {
		t.Errorf("streams reads the store's own listing:\n%s", r.stdout)
	}
}

func TestReplayCommandsCreateNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"projections"}, exitNotFound},
		{[]string{"catalog", "--json"}, exitOK},
		{[]string{"replay", "catalog"}, exitNotFound},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := run(t, "", append(c.args, "--db", dir+"/events.db")...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, c.code, r.stderr)
			}
			if entries, _ := readDir(dir); len(entries) != 0 {
				t.Errorf("%s left %q behind", c.args[0], entries)
			}
		})
	}
}

func TestHelpListsReplayCommands(t *testing.T) {
	t.Parallel()
	r := mustRun(t, "", "help")
	for _, name := range []string{"projections", "replay", "catalog"} {
		if !strings.Contains(r.stdout, fmt.Sprintf("\n  %s ", name)) {
			t.Errorf("help lacks %s:\n%s", name, r.stdout)
		}
	}
	r = mustRun(t, "", "help", "replay")
	for _, want := range []string{"Usage: eventlite replay NAME [--dry-run] [--from-scratch]", "--dry-run", "--from-scratch"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help replay lacks %q:\n%s", want, r.stdout)
		}
	}
}
