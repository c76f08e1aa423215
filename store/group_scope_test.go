package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// groupTestStores opens the stores TestGroupRequestScopes runs on: a
// SQLite file, and a fresh PostgreSQL schema (dropped at the end) when
// EVENTLITE_TEST_POSTGRES holds a server's URL.
func groupTestStores(t *testing.T) map[string]*Store {
	t.Helper()
	ctx := context.Background()
	out := map[string]*Store{}
	s, err := Open(ctx, filepath.Join(t.TempDir(), "group.db"), &Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	out["sqlite"] = s
	base := os.Getenv("EVENTLITE_TEST_POSTGRES")
	if base == "" {
		t.Log("PostgreSQL skipped: EVENTLITE_TEST_POSTGRES is empty")
		return out
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "t_" + hex.EncodeToString(b[:])
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("eventlite_schema", schema)
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer db.Close()
		if _, err := db.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	pg, err := Open(ctx, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	out["postgres"] = pg
	return out
}

// TestGroupRequestScopes: one group commit, built by hand, mixes appends
// that succeed with appends and Update closures that fail at each point
// an append can fail: a taken id in the last row of a one-statement
// insert and of a longer batch, a failed expectation, the streams row of a
// new stream refused after its events were inserted, a retry, a closure
// that appends and then fails. Each failure undoes its own writes only
// (the writer opens a request's savepoint only where a failure could
// leave a write behind), and the appends that succeed get consecutive
// positions in the group's order (the writer reads the head once and
// carries it from append to append, reading it afresh after a closure).
func TestGroupRequestScopes(t *testing.T) {
	for name, s := range groupTestStores(t) {
		t.Run(name, func(t *testing.T) { testGroupRequestScopes(t, s, nil) })
	}
}

// TestGroupOfAppendsDecidedByServer: TestGroupRequestScopes's group
// without its Update closures, which on PostgreSQL the server decides in
// one round trip (driver.GroupWriter): the same outcomes, each refused
// append told apart as before (a taken id, a failed expectation, a
// retry). Without the append whose streams row a trigger refuses, the
// group runs that way to the end; with it, its statement fails and the
// group runs again the slow way (a savepoint per request), where that
// append fails alone.
func TestGroupOfAppendsDecidedByServer(t *testing.T) {
	for _, boom := range []bool{false, true} {
		for name, s := range groupTestStores(t) {
			t.Run(fmt.Sprintf("%s/refused-streams-row=%t", name, boom), func(t *testing.T) {
				skip := map[string]bool{"closure that appends": true, "closure that appends, then fails": true}
				if !boom {
					skip["new stream whose streams row is refused"] = true
				}
				var largest *int
				if gw, ok := s.stmts.(driver.GroupWriter); ok {
					c := &countingGroupWriter{Writer: s.stmts, gw: gw}
					s.stmts, largest = c, &c.largest
					defer func() { s.stmts = c.Writer }()
				}
				testGroupRequestScopes(t, s, skip)
				// 12 requests less the skipped ones, in one group.
				if want := 12 - len(skip); largest != nil && *largest != want {
					t.Errorf("the largest group the server decided held %d appends, want %d", *largest, want)
				}
			})
		}
	}
}

// countingGroupWriter records the largest group a GroupWriter decided.
type countingGroupWriter struct {
	driver.Writer
	gw      driver.GroupWriter
	largest int
}

func (c *countingGroupWriter) AppendGroup(ctx context.Context, bs []driver.DecidedBatch, out []driver.Decision, commit bool) (int, error) {
	c.largest = max(c.largest, len(bs))
	return c.gw.AppendGroup(ctx, bs, out, commit)
}

func testGroupRequestScopes(t *testing.T, s *Store, skip map[string]bool) {
	ctx := context.Background()
	ev := func(id string) envelope.Event {
		e, err := envelope.New("t", map[string]string{"id": id})
		if err != nil {
			t.Fatal(err)
		}
		e.ID, e.Source = id, "/test"
		return e
	}
	evs := func(prefix string, n int, last string) []envelope.Event {
		out := make([]envelope.Event, n)
		for i := range out {
			out[i] = ev(fmt.Sprintf("%s-%d", prefix, i))
		}
		if last != "" {
			out[n-1] = ev(last)
		}
		return out
	}
	// Streams s0..s3 of one event each; s3's is "taken"; "sd" is
	// soft-deleted; a trigger refuses the streams row of "boom".
	for i := range 4 {
		id := fmt.Sprintf("setup-%d", i)
		if i == 3 {
			id = "taken"
		}
		if _, err := s.Append(ctx, "acme", fmt.Sprintf("s%d", i), NoStream, ev(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, "acme", "sd", NoStream, ev("setup-sd")); err != nil {
		t.Fatal(err)
	}
	del, err := s.deleteStream(ctx, nil, "acme", "sd", false, "", "", Any)
	if err != nil {
		t.Fatal(err)
	}
	head := del.LastPosition()
	refuse := []string{`CREATE TRIGGER boom BEFORE INSERT ON streams WHEN NEW.stream_id = 'boom'
		BEGIN SELECT RAISE(ABORT, 'boom refused'); END`}
	drop := []string{`DROP TRIGGER boom`}
	if s.onServer() {
		refuse = []string{`CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom refused'; END $$`,
			`CREATE TRIGGER boom BEFORE INSERT ON streams FOR EACH ROW WHEN (NEW.stream_id = 'boom') EXECUTE FUNCTION boom()`}
		drop = []string{`DROP TRIGGER boom ON streams`, `DROP FUNCTION boom()`}
	}
	execAll := func(qs []string) {
		if err := s.Update(ctx, func(tx *Tx) error {
			for _, q := range qs {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	execAll(refuse)

	type want struct {
		name    string
		err     func(error) bool // nil: succeeds
		ids     []string         // stored by it, in order (none when it fails)
		replay  bool
		ghostID []string // ids that must not be stored
	}
	isDup := func(err error) bool { var de *DuplicateError; return errors.As(err, &de) }
	isConflict := func(err error) bool { var ce *ConflictError; return errors.As(err, &ce) }
	anyErr := func(err error) bool { return err != nil }
	errClosure := errors.New("closure fails after its append")

	var group []*request
	var wants []want
	add := func(w want, r *request) {
		if skip[w.name] {
			return
		}
		r.ctx, r.done = ctx, make(chan struct{})
		group, wants = append(group, r), append(wants, w)
	}
	appendReq := func(stream string, exp Expected, e []envelope.Event) *request {
		a, err := s.prepareAppend("acme", stream, exp, e)
		if err != nil {
			t.Fatal(err)
		}
		return &request{a: a}
	}
	ids := func(e []envelope.Event) []string {
		var out []string
		for _, x := range e {
			out = append(out, x.ID)
		}
		return out
	}
	e0 := evs("r0", 1, "")
	add(want{name: "append to s0", ids: ids(e0)}, appendReq("s0", Any, e0))
	e1 := evs("r1", 3, "taken")
	add(want{name: "3 events, the last id taken", err: isDup, ghostID: ids(e1[:2])}, appendReq("s1", Any, e1))
	e2 := evs("r2", 1, "")
	add(want{name: "failed expectation", err: isConflict, ghostID: ids(e2)}, appendReq("s2", Exact(5), e2))
	e3 := evs("r3", 2, "")
	add(want{name: "new stream", ids: ids(e3)}, appendReq("new", NoStream, e3))
	e5 := evs("r5", 40, "taken")
	add(want{name: "40 events, the last id taken", err: isDup, ghostID: ids(e5[:39])}, appendReq("s1", Any, e5))
	add(want{name: "retry of s3's event", replay: true}, appendReq("s3", Any, []envelope.Event{ev("taken")}))
	e6 := evs("r6", 1, "")
	add(want{name: "append to s3 after its retry", ids: ids(e6)}, appendReq("s3", Exact(1), e6))
	e7 := evs("r7", 1, "")
	add(want{name: "closure that appends", ids: ids(e7)}, &request{fn: func(tx *Tx) error {
		_, err := tx.Append(ctx, "acme", "s2", Any, e7...)
		return err
	}})
	e8 := evs("r8", 2, "")
	add(want{name: "closure that appends, then fails", err: func(err error) bool { return errors.Is(err, errClosure) }, ghostID: ids(e8)},
		&request{fn: func(tx *Tx) error {
			if _, err := tx.Append(ctx, "acme", "s2", Any, e8...); err != nil {
				return err
			}
			return errClosure
		}})
	e9 := evs("r9", 1, "")
	add(want{name: "revives a soft-deleted stream", ids: ids(e9)}, appendReq("sd", NoStream, e9))
	e4 := evs("r4", 1, "")
	add(want{name: "new stream whose streams row is refused", err: anyErr, ghostID: ids(e4)}, appendReq("boom", NoStream, e4))
	e10 := evs("r10", 2, "")
	add(want{name: "append to s0 again", ids: ids(e10)}, appendReq("s0", Exact(2), e10))

	s.w.mu.Lock()
	s.runGroup(group)
	s.w.mu.Unlock()

	var stored []string
	next := head + 1
	for i, r := range group {
		<-r.done
		w := wants[i]
		if w.err != nil {
			if !w.err(r.err) {
				t.Errorf("%s: error %v, not the one wanted", w.name, r.err)
			}
			continue
		}
		if r.err != nil {
			t.Errorf("%s: %v", w.name, r.err)
			continue
		}
		if r.fn != nil {
			stored = append(stored, w.ids...)
			next += int64(len(w.ids))
			continue
		}
		if r.res.Replayed != w.replay {
			t.Errorf("%s: Replayed %v, want %v", w.name, r.res.Replayed, w.replay)
		}
		if w.replay {
			continue
		}
		if got := r.res.Positions(); got[0] != next || got[len(got)-1] != next+int64(len(got))-1 {
			t.Errorf("%s: positions %v, want from %d on", w.name, got, next)
		}
		stored = append(stored, w.ids...)
		next += int64(len(w.ids))
	}
	var log []string
	var positions []int64
	for e, err := range s.ReadAll(ctx, ReadAllOptions{From: head + 1}) {
		if err != nil {
			t.Fatal(err)
		}
		log, positions = append(log, e.ID), append(positions, e.Position)
	}
	if !slices.Equal(log, stored) {
		t.Errorf("the log after the setup holds %v, want %v", log, stored)
	}
	for i, p := range positions {
		if p != head+1+int64(i) {
			t.Errorf("positions %v: want consecutive from %d", positions, head+1)
			break
		}
	}
	for i, w := range wants {
		for _, id := range w.ghostID {
			if slices.Contains(log, id) {
				t.Errorf("%s (request %d) failed, yet left event %s", w.name, i, id)
			}
		}
	}
	if v, err := s.StreamVersion(ctx, "acme", "s1"); err != nil || v != 1 {
		t.Errorf("s1 at version %d (%v), want 1: its failed appends moved it", v, err)
	}
	if v, err := s.StreamVersion(ctx, "acme", "boom"); err != nil || v != 0 {
		t.Errorf("stream boom: version %d (%v), want 0: its refused append moved it", v, err)
	}
	execAll(drop)
	if err := s.CheckInvariants(ctx); err != nil {
		t.Error(err)
	}
}
