package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"

	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/google/go-cmp/cmp"
)

// AppendN appends n events to a stream, one append each, and returns
// their positions.
func AppendN(t *testing.T, s *store.Store, tenant, stream string, n int) []int64 {
	t.Helper()
	var ps []int64
	for i := range n {
		res, err := s.Append(context.Background(), tenant, stream, store.Any, Event(t, "thing.happened", map[string]int{"i": i}))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, res.Positions()...)
	}
	return ps
}

// PendingPositions returns the positions the outbox hands out at now.
func PendingPositions(t *testing.T, s *store.Store, now time.Time) []int64 {
	t.Helper()
	rows, err := outbox.For(s).Read(context.Background(), outbox.ReadOptions{Limit: 1000, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var ps []int64
	for _, r := range rows {
		ps = append(ps, r.Event.Position)
	}
	return ps
}

// Settle records, in one transaction under lease l, what a relay
// published, what failed and what it gave up on.
func Settle(t *testing.T, s *store.Store, l store.Lease, pub []outboxmark.Published, fail, dead []outboxmark.Failure) error {
	t.Helper()
	return s.Update(context.Background(), func(tx *store.Tx) error {
		ctx := context.Background()
		if _, err := store.Bookkeeping(inside.Key{}, tx).MarkPublished(ctx, l, pub); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).RecordFailure(ctx, l, fail); err != nil {
			return err
		}
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, dead)
	})
}

// MustRead reads the outbox and fails the test on an error.
func MustRead(t *testing.T, s *store.Store, o outbox.ReadOptions) []outbox.Row {
	t.Helper()
	rows, err := outbox.For(s).Read(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func testOutboxReadMarkAndFence(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	a := AppendN(t, s, "t1", "a", 2)
	b := AppendN(t, s, "t2", "b", 1)
	now := time.Now()
	rows, err := outbox.For(s).Read(ctx, outbox.ReadOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Event.Tenant != "t1" || rows[0].Event.Stream != "a" || rows[0].Event.StreamVersion != 1 ||
		rows[2].Event.Tenant != "t2" || string(rows[2].Event.Data) != `{"i":0}` {
		t.Fatalf("pending rows: %+v", rows)
	}
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := Settle(t, s, l, []outboxmark.Published{{Position: a[0], BrokerSequence: 7}, {Position: b[0]}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{a[1]}, PendingPositions(t, s, now)); diff != "" {
		t.Errorf("pending after marking (-want +got):\n%s", diff)
	}
	es, err := outbox.For(s).Entries(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if es[0].BrokerSequence != 7 || es[0].PublishedToken != l.Token || es[0].PublishedAt.IsZero() || es[2].BrokerSequence != 0 || !es[1].PublishedAt.IsZero() {
		t.Errorf("entries: %+v", es)
	}
	// Marking again is harmless.
	if err := Settle(t, s, l, []outboxmark.Published{{Position: a[0], BrokerSequence: 9}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	// A stale lease writes nothing, whatever it carries.
	stale := l
	stale.Token--
	err = Settle(t, s, stale, []outboxmark.Published{{Position: a[1]}}, nil, nil)
	if !errors.Is(err, store.ErrStaleFence) {
		t.Fatalf("stale mark: %v", err)
	}
	for _, f := range []func() error{
		func() error { return Settle(t, s, stale, nil, []outboxmark.Failure{{Position: a[1], Error: "x"}}, nil) },
		func() error { return Settle(t, s, stale, nil, nil, []outboxmark.Failure{{Position: a[1], Error: "x"}}) },
	} {
		if err := f(); !errors.Is(err, store.ErrStaleFence) {
			t.Fatalf("stale failure write: %v", err)
		}
	}
	if err := store.Inner(inside.Key{}, s).ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := Settle(t, s, l, []outboxmark.Published{{Position: a[1]}}, nil, nil); !errors.Is(err, store.ErrStaleFence) {
		t.Fatalf("mark after release: %v", err)
	}
	st, err := outbox.For(s).Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 1 || st.Published != 2 || st.Oldest.IsZero() || st.DeadLetters != 0 {
		t.Errorf("stats: %+v", st)
	}
}

func testOutboxFailuresHoldTheirStream(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	a := AppendN(t, s, "default", "a", 3)
	b := AppendN(t, s, "default", "b", 2)
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	// a's first event failed once and waits until now+10s: a's later
	// events wait too, b goes on.
	if err := Settle(t, s, l, nil, []outboxmark.Failure{{Position: a[0], Error: "timeout", NextAttemptAt: now.Add(10 * time.Second)}}, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b, PendingPositions(t, s, now)); diff != "" {
		t.Errorf("pending while a backs off (-want +got):\n%s", diff)
	}
	next, ok, err := outbox.For(s).NextAttempt(ctx)
	if err != nil || !ok || !next.Equal(now.Add(10*time.Second)) {
		t.Errorf("next attempt: %v %v %v", next, ok, err)
	}
	// Once due, a comes back in order, with its attempt on record.
	rows, err := outbox.For(s).Read(ctx, outbox.ReadOptions{Now: now.Add(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || rows[0].Event.Position != a[0] || rows[0].Attempts != 1 || rows[0].LastError != "timeout" || rows[0].FirstFailedAt.IsZero() {
		t.Fatalf("rows when due: %+v", rows[0])
	}
	// After rows: paging.
	if got := len(MustRead(t, s, outbox.ReadOptions{After: a[2], Now: now.Add(time.Hour)})); got != 2 {
		t.Errorf("after %d: %d rows, want 2", a[2], got)
	}
	st, _ := outbox.For(s).Stats(ctx)
	if st.Retried != 1 || st.Pending != 5 {
		t.Errorf("stats: %+v", st)
	}
}

func testDeadLettersParkRetryDiscard(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	a := AppendN(t, s, "default", "a", 3)
	b := AppendN(t, s, "default", "b", 1)
	other := AppendN(t, s, "other", "a", 1) // same stream id, another tenant
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := Settle(t, s, l, []outboxmark.Published{{Position: b[0]}}, nil, []outboxmark.Failure{{Position: a[0], Error: "too big"}}); err != nil {
		t.Fatal(err)
	}
	// a is parked in tenant default only; it stays parked however late.
	if diff := cmp.Diff(other, PendingPositions(t, s, now.Add(24*time.Hour))); diff != "" {
		t.Errorf("pending with a parked (-want +got):\n%s", diff)
	}
	dls, err := outbox.For(s).DeadLetters(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || dls[0].Position != a[0] || dls[0].Stream != "a" || dls[0].Version != 1 || dls[0].Attempts != 1 ||
		dls[0].Error != "too big" || dls[0].FirstFailed.IsZero() || dls[0].LastFailed.IsZero() {
		t.Fatalf("dead letters: %+v", dls)
	}
	if dls, _ := outbox.For(s).DeadLetters(ctx, "other"); len(dls) != 0 {
		t.Errorf("other tenant's dead letters: %+v", dls)
	}
	parked, err := outbox.For(s).ParkedStreams(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]outbox.ParkedStream{{Tenant: "default", Stream: "a", DeadLetter: a[0], Waiting: 3}}, parked); diff != "" {
		t.Errorf("parked (-want +got):\n%s", diff)
	}
	st, _ := outbox.For(s).Stats(ctx)
	if st.DeadLetters != 1 || st.ParkedStreams != 1 || st.Parked != 3 || st.DeadLettered != 1 || st.Pending != 4 {
		t.Errorf("stats: %+v", st)
	}
	// Unknown ids, and the right id in the wrong tenant, are not found.
	for _, c := range []struct{ tenant, id string }{{"default", "nope"}, {"other", dls[0].EventID}} {
		if _, err := outbox.For(s).RetryDeadLetter(ctx, c.tenant, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("retry %v: %v", c, err)
		}
		if _, err := outbox.For(s).DiscardDeadLetter(ctx, c.tenant, c.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("discard %v: %v", c, err)
		}
	}
	// Retry: same event, attempts reset, the stream flows again in order.
	d, err := outbox.For(s).RetryDeadLetter(ctx, "default", dls[0].EventID)
	if err != nil || d.Position != a[0] {
		t.Fatalf("retry: %+v %v", d, err)
	}
	rows := MustRead(t, s, outbox.ReadOptions{Now: now})
	if len(rows) != 4 || rows[0].Event.Position != a[0] || rows[0].Attempts != 0 || rows[0].Event.ID != dls[0].EventID {
		t.Fatalf("after retry: %+v", rows)
	}
	if _, err := outbox.For(s).RetryDeadLetter(ctx, "default", dls[0].EventID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second retry: %v", err)
	}
	// Dead again, then discarded: never read again, the stream unparked.
	if err := Settle(t, s, l, nil, nil, []outboxmark.Failure{{Position: a[0], Error: "still too big"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.For(s).DiscardDeadLetter(ctx, "default", dls[0].EventID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{a[1], a[2], other[0]}, PendingPositions(t, s, now)); diff != "" {
		t.Errorf("pending after discard (-want +got):\n%s", diff)
	}
	// A discarded row is no longer a dead letter, and cannot be marked.
	if dls, _ := outbox.For(s).DeadLetters(ctx, ""); len(dls) != 0 {
		t.Errorf("dead letters after discard: %+v", dls)
	}
	if err := Settle(t, s, l, []outboxmark.Published{{Position: a[0]}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	es, _ := outbox.For(s).Entries(ctx, a[0]-1, 1)
	if !es[0].PublishedAt.IsZero() || es[0].DiscardedAt.IsZero() {
		t.Errorf("discarded row: %+v", es[0])
	}
	st, _ = outbox.For(s).Stats(ctx)
	if st.Discarded != 1 || st.Requeued != 1 || st.DeadLettered != 2 || st.DeadLetters != 0 || st.Pending != 3 {
		t.Errorf("stats: %+v", st)
	}
}

func testRetryAllDeadLetters(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var dead []outboxmark.Failure
	for i := range 3 {
		p := AppendN(t, s, "default", fmt.Sprint("s", i), 1)
		dead = append(dead, outboxmark.Failure{Position: p[0], Error: "no"})
	}
	p := AppendN(t, s, "other", "x", 1)
	dead = append(dead, outboxmark.Failure{Position: p[0], Error: "no"})
	if err := Settle(t, s, l, nil, nil, dead); err != nil {
		t.Fatal(err)
	}
	ds, err := outbox.For(s).RetryDeadLetters(ctx, "default")
	if err != nil || len(ds) != 3 {
		t.Fatalf("retry all: %d %v", len(ds), err)
	}
	if left, _ := outbox.For(s).DeadLetters(ctx, ""); len(left) != 1 || left[0].Tenant != "other" {
		t.Errorf("left: %+v", left)
	}
}

// testOutboxInTheAppendsTransaction: an append's outbox rows are written
// in the append's transaction. An Update that appends and then fails
// leaves no event, no pending row and no moved checkpoint, and takes no
// position; one that commits makes its events pending, in order.
func testOutboxInTheAppendsTransaction(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	errBoom := errors.New("boom")
	err := s.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.Append(ctx, "default", "a", store.NoStream, Event(t, "t", 1), Event(t, "t", 2)); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "p", 2, nil); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("update: %v, want the closure's error", err)
	}
	if head, _ := s.Head(ctx); head != 0 {
		t.Errorf("head %d after a rolled-back append, want 0", head)
	}
	if ps := PendingPositions(t, s, time.Now()); len(ps) != 0 {
		t.Errorf("pending after a rolled-back append: %v", ps)
	}
	if st, err := outbox.For(s).Stats(ctx); err != nil || st.Pending != 0 {
		t.Errorf("outbox stats after a rolled-back append: %+v, %v", st, err)
	}
	if cp, _ := projection.Records(s).Checkpoint(ctx, "p"); cp != 0 {
		t.Errorf("checkpoint %d after a rolled-back update, want 0", cp)
	}
	var res store.AppendResult
	if err := s.Update(ctx, func(tx *store.Tx) error {
		res, err = tx.Append(ctx, "default", "a", store.NoStream, Event(t, "t", 1), Event(t, "t", 2))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{1, 2}, res.Positions()); diff != "" {
		t.Errorf("positions after a rolled-back append (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(res.Positions(), PendingPositions(t, s, time.Now())); diff != "" {
		t.Errorf("pending after the commit (-want +got):\n%s", diff)
	}
}
