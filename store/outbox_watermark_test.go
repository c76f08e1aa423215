package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// watermark reads the outbox's watermark W (settled) and cursor C
// (scanned) on the writer's connection.
func watermark(t *testing.T, s *store.Store) (settled, scanned int64) {
	t.Helper()
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT settled, scanned FROM outbox_watermark`).Scan(&settled, &scanned)
	}); err != nil {
		t.Fatal(err)
	}
	return settled, scanned
}

// TestOutboxWatermarkRandomized drives the outbox the way relays and
// operators do, at random: appends, batches read and settled in part
// (published, failed with a backoff, dead-lettered), retries and discards
// of dead letters, a clock that moves. After every step W stays below
// every event not yet published or discarded (the model's), the pending
// count agrees with the model, and the store's invariants hold (W and the
// cursor C included). At the end, with every dead letter retried, the
// relay drains the outbox: every event published exactly once (or
// discarded), each stream's in version order, and W at the head.
func TestOutboxWatermarkRandomized(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(testSeed(t), 7))
	s := storetest.MustOpen(t, nil)
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "me", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	streamOf := map[int64]string{}
	version := map[int64]int64{}
	settled := map[int64]string{}          // position -> "published" | "discarded"
	publishedOrder := map[string][]int64{} // stream -> versions in publication order
	clock := time.Unix(1_000_000, 0)
	streams := []string{"a", "b", "c", "d", "e"}
	appendSome := func() {
		st := streams[rng.IntN(len(streams))]
		n := 1 + rng.IntN(4)
		evs := make([]envelope.Event, n)
		for i := range evs {
			evs[i] = drivertest.Event(t, "thing.happened", map[string]int{"i": i})
		}
		res, err := s.Append(ctx, "default", st, store.Any, evs...)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Events {
			streamOf[e.Position], version[e.Position] = st, e.StreamVersion
		}
	}
	check := func(step string) {
		t.Helper()
		w, c := watermark(t, s)
		var pending int64
		for p := range streamOf {
			if settled[p] == "" {
				pending++
				if p <= w {
					t.Fatalf("%s: W %d passes position %d, which is neither published nor discarded", step, w, p)
				}
			}
		}
		if st, err := outbox.For(s).Stats(ctx); err != nil || st.Pending != pending {
			t.Fatalf("%s: stats %+v %v, want %d pending (W %d, C %d)", step, st, err, pending, w, c)
		}
		if err := s.CheckInvariants(ctx); err != nil {
			t.Fatalf("%s: %v (W %d, C %d)", step, err, w, c)
		}
	}
	relayBatch := func(drain bool) int {
		var rows []outbox.Row
		after := int64(0)
		for range 1 + rng.IntN(2) { // a read from the start, sometimes one going on
			more := drivertest.MustRead(t, s, outbox.ReadOptions{After: after, Limit: 1 + rng.IntN(8), Now: clock})
			rows = append(rows, more...)
			if len(more) == 0 {
				break
			}
			after = more[len(more)-1].Event.Position
		}
		var pub []outboxmark.Published
		var fail, dead []outboxmark.Failure
		failed := map[string]bool{}
		for _, r := range rows {
			st := streamOf[r.Event.Position]
			if failed[st] {
				continue // a failure holds the stream's later rows back
			}
			switch x := rng.IntN(10); {
			case drain || x < 7:
				pub = append(pub, outboxmark.Published{Position: r.Event.Position})
			case x < 9:
				fail = append(fail, outboxmark.Failure{Position: r.Event.Position, Error: "flaky", NextAttemptAt: clock.Add(time.Duration(1+rng.IntN(3)) * time.Second)})
				failed[st] = true
			default:
				dead = append(dead, outboxmark.Failure{Position: r.Event.Position, Error: "poison"})
				failed[st] = true
			}
		}
		if err := drivertest.Settle(t, s, l, pub, fail, dead); err != nil {
			t.Fatal(err)
		}
		for _, p := range pub {
			if settled[p.Position] != "" {
				t.Fatalf("position %d read and published again after it was %s", p.Position, settled[p.Position])
			}
			settled[p.Position] = "published"
			st := streamOf[p.Position]
			publishedOrder[st] = append(publishedOrder[st], version[p.Position])
		}
		return len(rows)
	}
	for i := range 300 {
		switch x := rng.IntN(20); {
		case x < 8:
			appendSome()
		case x < 16:
			relayBatch(false)
		case x < 18:
			clock = clock.Add(time.Duration(rng.IntN(3)) * time.Second)
		default:
			dls, err := outbox.For(s).DeadLetters(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(dls) == 0 {
				continue
			}
			d := dls[rng.IntN(len(dls))]
			if rng.IntN(2) == 0 {
				if _, err := outbox.For(s).RetryDeadLetter(ctx, "default", d.EventID); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := outbox.For(s).DiscardDeadLetter(ctx, "default", d.EventID); err != nil {
					t.Fatal(err)
				}
				settled[d.Position] = "discarded"
				publishedOrder[streamOf[d.Position]] = append(publishedOrder[streamOf[d.Position]], version[d.Position])
			}
		}
		check(fmt.Sprintf("step %d", i))
	}
	// Drain: retry every dead letter, let every backoff fall due, publish.
	if _, err := outbox.For(s).RetryDeadLetters(ctx, ""); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	for relayBatch(true) > 0 {
	}
	check("drained")
	for p := range streamOf {
		if settled[p] == "" {
			t.Errorf("position %d (%s v%d) never published", p, streamOf[p], version[p])
		}
	}
	for st, vs := range publishedOrder {
		if !slices.IsSorted(vs) {
			t.Errorf("stream %s settled out of order: %v", st, vs)
		}
	}
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := watermark(t, s); w != head {
		t.Errorf("drained: W %d, want the head %d", w, head)
	}
}

// TestOutboxParkedStreamCursor: a stream parked by a dead letter holds W
// at its dead letter, but not the other streams, and not the relay's
// cursor C: the relay's reads start above what it published since (the
// read's plan is TestOutboxQueryPlans). Discarding the dead letter lowers
// C, so the parked stream's waiting events are read again, in order, and
// W then passes them.
func TestOutboxParkedStreamCursor(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "me", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	parked := drivertest.AppendN(t, s, "default", "parked", 1)
	if err := drivertest.Settle(t, s, l, nil, nil, []outboxmark.Failure{{Position: parked[0], Error: "poison"}}); err != nil {
		t.Fatal(err)
	}
	waiting := drivertest.AppendN(t, s, "default", "parked", 2)
	for range 5 {
		drivertest.AppendN(t, s, "default", "other", 20)
		rows := drivertest.MustRead(t, s, outbox.ReadOptions{Now: now})
		if len(rows) != 20 {
			t.Fatalf("read %d rows, want the 20 new ones of the other stream", len(rows))
		}
		pub := make([]outboxmark.Published, len(rows))
		for i, r := range rows {
			if r.Event.Stream != "other" {
				t.Fatalf("read the parked stream's %+v", r.Event)
			}
			pub[i] = outboxmark.Published{Position: r.Event.Position}
		}
		if err := drivertest.Settle(t, s, l, pub, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	head, _ := s.Head(ctx)
	w, c := watermark(t, s)
	if w != parked[0]-1 || c != head {
		t.Fatalf("parked: W %d C %d, want W %d (below the dead letter) and C %d (the head: nothing left to read below it)", w, c, parked[0]-1, head)
	}
	if st, _ := outbox.For(s).Stats(ctx); st.Pending != 3 || st.Parked != 3 || st.DeadLetters != 1 {
		t.Errorf("stats while parked: %+v", st)
	}
	dls, _ := outbox.For(s).DeadLetters(ctx, "")
	if _, err := outbox.For(s).DiscardDeadLetter(ctx, "default", dls[0].EventID); err != nil {
		t.Fatal(err)
	}
	rows := drivertest.MustRead(t, s, outbox.ReadOptions{Now: now})
	if len(rows) != 2 || rows[0].Event.Position != waiting[0] || rows[1].Event.Position != waiting[1] {
		t.Fatalf("after the discard: %+v, want the parked stream's waiting %v", rows, waiting)
	}
	if err := drivertest.Settle(t, s, l, []outboxmark.Published{{Position: waiting[0]}, {Position: waiting[1]}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if w, c := watermark(t, s); w != head || c < head {
		t.Errorf("resolved: W %d C %d, want both at the head %d", w, c, head)
	}
	if st, _ := outbox.For(s).Stats(ctx); st.Pending != 0 {
		t.Errorf("stats resolved: %+v", st)
	}
}

// TestOutboxFailedRowDueBelowCursor: a row that failed waits for its next
// attempt while the relay publishes past it (C moves past the stream's
// waiting events); once due, the read goes back for it and its stream's
// waiting events, in order, though they lie below C.
func TestOutboxFailedRowDueBelowCursor(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "me", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	a := drivertest.AppendN(t, s, "default", "a", 3)
	if err := drivertest.Settle(t, s, l, nil, []outboxmark.Failure{{Position: a[0], Error: "flaky", NextAttemptAt: now.Add(time.Minute)}}, nil); err != nil {
		t.Fatal(err)
	}
	b := drivertest.AppendN(t, s, "default", "b", 4)
	rows := drivertest.MustRead(t, s, outbox.ReadOptions{Now: now})
	if len(rows) != 4 || rows[0].Event.Position != b[0] {
		t.Fatalf("while a backs off: %+v", rows)
	}
	if err := drivertest.Settle(t, s, l, []outboxmark.Published{{Position: b[0]}, {Position: b[1]}, {Position: b[2]}, {Position: b[3]}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if w, c := watermark(t, s); w != a[0]-1 || c != b[3] {
		t.Fatalf("W %d C %d, want %d and %d", w, c, a[0]-1, b[3])
	}
	// Due: read from a's failed row, with only one row per batch.
	later := now.Add(2 * time.Minute)
	for i, p := range a {
		rows := drivertest.MustRead(t, s, outbox.ReadOptions{Now: later, Limit: 1})
		if len(rows) != 1 || rows[0].Event.Position != p {
			t.Fatalf("due read %d: %+v, want position %d", i, rows, p)
		}
		if err := drivertest.Settle(t, s, l, []outboxmark.Published{{Position: p}}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if rows := drivertest.MustRead(t, s, outbox.ReadOptions{Now: later}); len(rows) != 0 {
		t.Fatalf("left: %+v", rows)
	}
	head, _ := s.Head(ctx)
	if w, _ := watermark(t, s); w != head {
		t.Errorf("W %d, want the head %d", w, head)
	}
}

// TestOutboxMigrationToWatermark: a file at schema 14, where every event
// has an outbox row (published, failed and backing off, dead, discarded,
// re-queued, pending), migrates to the same pending set, the same
// counters, dead letters and parked streams, the same rows for the relay
// to read, and the same relay behaviour afterwards.
func TestOutboxMigrationToWatermark(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		stream string
		n      int
	}{{"a", 3}, {"b", 2}, {"c", 2}, {"d", 2}, {"e", 1}, {"f", 1}} {
		drivertest.AppendN(t, s, "default", x.stream, x.n) // positions 1..11
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(24 * time.Hour).UnixNano()
	// Back to schema 14: one row per event, the pending index, no
	// watermark, the events' columns before 0016.
	storetest.RawExec(t, path, eventsBefore16...)
	storetest.RawExec(t, path,
		`DROP TABLE outbox_watermark`,
		`DELETE FROM outbox`,
		`INSERT INTO outbox (position) SELECT position FROM events`,
		`CREATE INDEX outbox_pending ON outbox (position) WHERE published_at IS NULL AND discarded_at IS NULL`,
		// a (1-3), b's first (4), d's first (8): published.
		`UPDATE outbox SET published_at = 100, published_token = 1, broker_sequence = position WHERE position IN (1, 2, 3, 4, 8)`,
		// b's second (5) failed twice and backs off.
		fmt.Sprintf(`UPDATE outbox SET attempts = 2, first_failed_at = 10, last_failed_at = 20, last_error = 'flaky', next_attempt_at = %d WHERE position = 5`, future),
		// c's first (6) is a dead letter: c's second (7) waits.
		`UPDATE outbox SET attempts = 3, first_failed_at = 10, last_failed_at = 30, last_error = 'poison', dead_at = 30 WHERE position = 6`,
		// d's second (9) was a dead letter, discarded.
		`UPDATE outbox SET attempts = 3, first_failed_at = 10, last_failed_at = 30, last_error = 'poison', dead_at = 30, discarded_at = 40 WHERE position = 9`,
		// f's (11) was a dead letter, re-queued; e's (10) never tried.
		`UPDATE outbox SET last_error = 'was poison', last_failed_at = 30 WHERE position = 11`,
		`UPDATE outbox_counters SET value = CASE name WHEN 'published' THEN 5 WHEN 'retried' THEN 2 WHEN 'dead_lettered' THEN 3
			WHEN 'discarded' THEN 1 WHEN 'requeued' THEN 1 END`,
		`PRAGMA user_version = 14`)
	// What schema 14 says, read from its own rows.
	pendingBefore := rawQueryString(t, path, `SELECT group_concat(position) FROM (SELECT position FROM outbox
		WHERE published_at IS NULL AND discarded_at IS NULL ORDER BY position)`)
	if pendingBefore != "5,6,7,10,11" {
		t.Fatalf("schema 14 file: pending %s", pendingBefore)
	}

	s = storetest.MustOpenPath(t, path, nil)
	if w, c := watermark(t, s); w != 4 || c != 4 {
		t.Errorf("migrated watermark: W %d C %d, want 4 (just below the oldest pending event)", w, c)
	}
	if n := rawQueryString(t, path, `SELECT count(*) FROM sqlite_master WHERE name = 'outbox_pending'`); n != "0" {
		t.Errorf("outbox_pending kept")
	}
	st, err := outbox.For(s).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.Oldest, st.Lag = time.Time{}, 0
	want := outbox.Stats{Pending: 5, DeadLetters: 1, ParkedStreams: 1, Parked: 2,
		Published: 5, Retried: 2, Requeued: 1, DeadLettered: 3, Discarded: 1}
	if st != want {
		t.Errorf("migrated stats:\n got %+v\nwant %+v", st, want)
	}
	es, err := outbox.For(s).Entries(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var pending []string
	for _, e := range es {
		if e.PublishedAt.IsZero() && e.DiscardedAt.IsZero() {
			pending = append(pending, strconv.FormatInt(e.Position, 10))
		}
	}
	if got := strings.Join(pending, ","); got != pendingBefore {
		t.Errorf("migrated pending set %s, want %s", got, pendingBefore)
	}
	if e := es[4]; e.Attempts != 2 || e.LastError != "flaky" || e.NextAttemptAt.UnixNano() != future {
		t.Errorf("migrated failed row: %+v", e)
	}
	if e := es[0]; e.PublishedAt.IsZero() || e.BrokerSequence != 1 || e.PublishedToken != 1 {
		t.Errorf("migrated published row: %+v", e)
	}
	if e := es[10]; e.LastError != "was poison" || e.Attempts != 0 {
		t.Errorf("migrated re-queued row: %+v", e)
	}
	dls, _ := outbox.For(s).DeadLetters(ctx, "")
	if len(dls) != 1 || dls[0].Position != 6 || dls[0].Attempts != 3 {
		t.Errorf("migrated dead letters: %+v", dls)
	}
	// The relay reads what it read before: b backs off, c is parked.
	now := time.Now()
	if got := drivertest.PendingPositions(t, s, now); !slices.Equal(got, []int64{10, 11}) {
		t.Errorf("migrated relay read %v, want [10 11]", got)
	}
	if got := drivertest.PendingPositions(t, s, time.Unix(0, future+1)); !slices.Equal(got, []int64{5, 10, 11}) {
		t.Errorf("migrated relay read once b is due %v, want [5 10 11]", got)
	}
	// And goes on as before: publishes what it can, then c's waiting
	// event once its dead letter is discarded; b still backs off.
	storetest.PublishAll(t, s)
	if _, err := outbox.For(s).DiscardDeadLetter(ctx, "default", dls[0].EventID); err != nil {
		t.Fatal(err)
	}
	if got := drivertest.PendingPositions(t, s, now); !slices.Equal(got, []int64{7}) {
		t.Errorf("after the discard the relay reads %v, want [7]", got)
	}
	storetest.PublishAll(t, s)
	st, _ = outbox.For(s).Stats(ctx)
	if st.Pending != 1 || st.Published != 8 || st.Discarded != 2 {
		t.Errorf("after the relay: %+v", st)
	}
	if w, _ := watermark(t, s); w != 4 {
		t.Errorf("W %d, want 4 (b's second event still backs off)", w)
	}
}

// TestOutboxWatermarkInvariants plants each defect of the watermark in a
// file and checks that CheckInvariants reports exactly it, with its
// count; a cursor past a stream that waits behind a failed row is no
// defect.
func TestOutboxWatermarkInvariants(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	build := func(name string, failed bool) string {
		path := filepath.Join(dir, name+".db")
		s, err := store.Open(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := drivertest.AppendN(t, s, "default", "a", 5) // positions 1..5
		l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "me", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var fail []outboxmark.Failure
		if failed {
			fail = []outboxmark.Failure{{Position: a[2], Error: "flaky", NextAttemptAt: time.Now().Add(time.Hour)}}
		}
		if err := drivertest.Settle(t, s, l, []outboxmark.Published{{Position: a[0]}, {Position: a[1]}}, fail, nil); err != nil {
			t.Fatal(err)
		}
		if w, c := watermark(t, s); w != 2 || c != 5 && failed || c != 2 && !failed {
			t.Fatalf("%s: W %d C %d", name, w, c)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name   string
		failed bool
		plant  string
		want   []string
	}{
		{"healthy", false, `SELECT 1`, nil},
		{"cursor past a failed row", true, `SELECT 1`, nil},
		{"watermark past unsettled events", false, `UPDATE outbox_watermark SET settled = 4, scanned = 5`,
			[]string{"2 events at or below the outbox watermark that are not settled",
				"1 pending events below the relay's cursor outside a stream with a failed row"}},
		{"watermark above the head", false, `UPDATE outbox_watermark SET settled = 9, scanned = 9`,
			[]string{"3 events at or below the outbox watermark that are not settled", "1 outbox watermarks above the newest position"}},
		{"no watermark", false, `DELETE FROM outbox_watermark`, []string{"1 outbox watermark rows other than one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := build(strings.ReplaceAll(tc.name, " ", "-"), tc.failed)
			storetest.RawExec(t, path, tc.plant)
			s, err := store.Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got []string
			var ie *store.InvariantError
			if err := s.CheckInvariants(ctx); errors.As(err, &ie) {
				got = ie.Problems
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
