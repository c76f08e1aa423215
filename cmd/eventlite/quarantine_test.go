package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// flakyProjection counts applications per position and fails on the
// event whose id *bad holds while broken is set.
func flakyProjection(name string, bad *atomic.Value, broken *atomic.Bool) projection.Projection {
	return projection.Projection{
		Name:   name,
		Tables: []projection.Table{{Name: name + "_applied", Schema: `CREATE TABLE {table} (position INTEGER PRIMARY KEY, n INTEGER NOT NULL)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			if id, _ := bad.Load().(string); id == e.ID && broken.Load() {
				return errors.New("handler bug on " + e.ID)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table(name+"_applied")+` (position, n) VALUES (?, 1)
				ON CONFLICT (position) DO UPDATE SET n = n + 1`, e.Position)
			return err
		},
	}
}

func appliedCounts(t *testing.T, s *store.Store, table string) map[int64]int {
	t.Helper()
	out := map[int64]int{}
	err := s.Update(t.Context(), func(tx *store.Tx) error {
		rows, err := tx.QueryContext(t.Context(), `SELECT position, n FROM `+table)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p int64
			var n int
			if err := rows.Scan(&p, &n); err != nil {
				return err
			}
			out[p] = n
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// untilQuarantine waits on commits (this process's and the CLI's) until
// ok holds for every entry of name.
func untilQuarantine(t *testing.T, s *store.Store, name string, ok func([]projection.QuarantineEntry) bool) []projection.QuarantineEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		changed := s.Changed()
		qs, err := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: name})
		if err != nil {
			t.Fatal(err)
		}
		if ok(qs) {
			return qs
		}
		select {
		case <-ctx.Done():
			t.Fatalf("quarantine of %s never got there: %+v", name, qs)
		case <-changed:
		}
	}
}

// TestQuarantineCommand drives list, retry and skip end to end: a live
// runner in Skip mode applies a retried event on its next pass, a
// consumer applies its retried event on its next pass, and a skipped
// event lets a stopped projection go on without it.
func TestQuarantineCommand(t *testing.T) {
	ctx := t.Context()
	db := newDB(t)
	s := storetest.MustOpenPath(t, db, &store.Options{PollInterval: 10 * time.Millisecond})
	var evs []envelope.Event
	for i := range 4 {
		e, _ := envelope.New("thing.happened", map[string]int{"i": i})
		e.Source = "/test"
		evs = append(evs, e)
	}
	res, err := s.Append(ctx, "default", "things", store.Any, evs...)
	if err != nil {
		t.Fatal(err)
	}
	bad := res.Events[1]

	// A live runner that skips what its handler fails on.
	var badID atomic.Value
	badID.Store(bad.ID)
	var broken atomic.Bool
	broken.Store(true)
	r, err := projection.NewRunner(s, flakyProjection("skipper", &badID, &broken),
		&projection.RunnerOptions{OnError: projection.Skip, MaxAttempts: 1, LeaseTTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if err := projection.WaitFor(ctx, s, "skipper", res.LastPosition()); err != nil {
		t.Fatal(err)
	}

	// A consumer that cannot interpret a type yet.
	var knows atomic.Bool
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE seen (id TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c, err := projection.NewConsumer(s, projection.ConsumerOptions{Name: "inbound", Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
		if e.Type == "order.teleported" && !knows.Load() {
			return fmt.Errorf("%w: type %s", projection.ErrUninterpretable, e.Type)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO seen (id) VALUES (?)`, e.ID)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	outside := envelope.Event{ID: "x1", Source: "/orders", Type: "order.teleported", Stream: "order-9", Tenant: "default", StreamVersion: 1,
		Time: time.Unix(1700000000, 0).UTC(), DataContentType: "application/json", Data: []byte(`{}`)}
	if out, err := c.Handle(ctx, outside); err != nil || out.Outcome != projection.Quarantined {
		t.Fatalf("Handle = %v, %v", out, err)
	}

	// list --json: both, with the facts.
	out := mustRun(t, "", "quarantine", "list", "--db", db, "--json")
	got := map[string]map[string]any{}
	for _, l := range lines(out.stdout) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		got[m["name"].(string)] = m
	}
	p, o := got["skipper"], got["inbound"]
	if p == nil || o == nil || len(got) != 2 {
		t.Fatalf("list --json:\n%s", out.stdout)
	}
	want := map[string]any{"kind": "projection", "event_id": bad.ID, "position": fmt.Sprint(bad.Position), "stream": "things",
		"type": "thing.happened", "attempts": 1.0, "error": "handler bug on " + bad.ID, "retry_requested": false}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("projection entry %s = %v, want %v", k, p[k], v)
		}
	}
	for k, v := range map[string]any{"kind": "consumer", "event_id": "x1", "stream": "order-9", "type": "order.teleported", "reason": "uninterpretable"} {
		if o[k] != v {
			t.Errorf("consumer entry %s = %v, want %v", k, o[k], v)
		}
	}
	for _, m := range []map[string]any{p, o} {
		for _, k := range []string{"first_failed", "last_failed"} {
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m[k])); err != nil {
				t.Errorf("%s %s: %v", m["name"], k, err)
			}
		}
	}
	if out := mustRun(t, "", "quarantine", "list", "--db", db, "--name", "inbound"); !strings.Contains(out.stdout, "x1") || strings.Contains(out.stdout, bad.ID) {
		t.Errorf("list --name inbound:\n%s", out.stdout)
	}

	// Unknown names and ids exit 5; wrong arguments 2.
	for _, args := range [][]string{
		{"quarantine", "list", "--name", "nobody"},
		{"quarantine", "retry", "nobody", bad.ID},
		{"quarantine", "retry", "skipper", "no-such-event"},
		{"quarantine", "skip", "inbound", bad.ID},
	} {
		if r := run(t, "", append(args, "--db", db)...); r.code != exitNotFound {
			t.Errorf("%q: exit %d, want 5; stderr:\n%s", args, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"quarantine", "retry", "skipper"}, {"quarantine", "list", "x"}, {"quarantine", "purge", "a", "b"}} {
		if r := run(t, "", append(args, "--db", db)...); r.code != exitUsage {
			t.Errorf("%q: exit %d, want 2", args, r.code)
		}
	}

	// Retry: the live runner applies it on its next pass, once.
	broken.Store(false)
	if out := mustRun(t, "", "quarantine", "retry", "skipper", bad.ID, "--db", db); !strings.Contains(out.stdout, "marked") {
		t.Errorf("retry printed %q", out.stdout)
	}
	qs := untilQuarantine(t, s, "skipper", func(qs []projection.QuarantineEntry) bool { return len(qs) == 1 && !qs[0].ResolvedAt.IsZero() })
	if qs[0].Resolution != "retried" {
		t.Fatalf("resolution %q", qs[0].Resolution)
	}
	counts := appliedCounts(t, s, "skipper_applied")
	for _, e := range res.Events {
		if counts[e.Position] != 1 {
			t.Errorf("position %d applied %d times, want once", e.Position, counts[e.Position])
		}
	}

	// The consumer's retry: applied on its next pass.
	knows.Store(true)
	mustRun(t, "", "quarantine", "retry", "inbound", "x1", "--db", db)
	if n, err := c.ApplyRetries(ctx); err != nil || n != 1 {
		t.Fatalf("ApplyRetries = %d, %v", n, err)
	}
	var seen int
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM seen WHERE id = 'x1'`).Scan(&seen)
	}); err != nil || seen != 1 {
		t.Fatalf("consumer applied x1 %d times (%v), want once", seen, err)
	}
	if out := mustRun(t, "", "quarantine", "list", "--db", db); !strings.Contains(out.stdout, "no quarantined events") {
		t.Errorf("list after the retries:\n%s", out.stdout)
	}
}

// TestQuarantineSkipStoppedProjection: a projection stopped on an event;
// the stop names the command; after quarantine skip its runner goes on
// with the next event and the skipped one is never applied.
func TestQuarantineSkipStoppedProjection(t *testing.T) {
	ctx := t.Context()
	db := newDB(t)
	s := storetest.MustOpenPath(t, db, nil)
	var evs []envelope.Event
	for i := range 3 {
		e, _ := envelope.New("thing.happened", map[string]int{"i": i})
		e.Source = "/test"
		evs = append(evs, e)
	}
	res, err := s.Append(ctx, "default", "things", store.Any, evs...)
	if err != nil {
		t.Fatal(err)
	}
	bad := res.Events[1]
	var badID atomic.Value
	badID.Store(bad.ID)
	var broken atomic.Bool
	broken.Store(true)
	r, err := projection.NewRunner(s, flakyProjection("stopper", &badID, &broken), &projection.RunnerOptions{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.CatchUp(ctx)
	if !errors.Is(err, projection.ErrStopped) || !strings.Contains(err.Error(), "eventlite quarantine skip stopper "+bad.ID) {
		t.Fatalf("CatchUp = %v", err)
	}
	if out := mustRun(t, "", "projections", "--db", db); !strings.Contains(out.stdout, "stopped") {
		t.Fatalf("projections:\n%s", out.stdout)
	}
	if out := mustRun(t, "", "quarantine", "skip", "stopper", bad.ID, "--db", db); !strings.Contains(out.stdout, "skipped") {
		t.Errorf("skip printed %q", out.stdout)
	}
	if cp, err := r.CatchUp(ctx); err != nil || cp != res.LastPosition() {
		t.Fatalf("CatchUp after skip = %d, %v", cp, err)
	}
	counts := appliedCounts(t, s, "stopper_applied")
	if counts[bad.Position] != 0 || counts[res.Events[0].Position] != 1 || counts[res.Events[2].Position] != 1 {
		t.Fatalf("applied %v, want every event but %d once", counts, bad.Position)
	}
	if r := run(t, "", "quarantine", "skip", "stopper", bad.ID, "--db", db); r.code != exitNotFound {
		t.Errorf("second skip: exit %d, want 5", r.code)
	}
}
