package drivertest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// OrderView is a consumer's read model of another service's orders.
func OrderView(t testing.TB, s *store.Store, opts projection.ConsumerOptions) *projection.Consumer {
	t.Helper()
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS order_view (tenant TEXT, id TEXT, status TEXT, version INTEGER, PRIMARY KEY (tenant, id))`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if opts.Name == "" {
		opts.Name = "orders"
	}
	opts.Apply = func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
		var status string
		switch e.Type {
		case "order.placed":
			status = "placed"
		case "order.paid":
			status = "paid"
		case "order.cancelled":
			status = "cancelled"
		case "order.shipped":
			status = "shipped"
		default:
			return fmt.Errorf("%w: type %q", projection.ErrUninterpretable, e.Type)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO order_view (tenant, id, status, version) VALUES (?, ?, ?, ?)
			ON CONFLICT (tenant, id) DO UPDATE SET status = excluded.status, version = excluded.version`, e.Tenant, e.Stream, status, e.StreamVersion)
		return err
	}
	c, err := projection.NewConsumer(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ViewOf returns the status and version OrderView holds for an order,
// or "" and 0 for none.
func ViewOf(t testing.TB, s *store.Store, id string) (string, int64) {
	t.Helper()
	var status string
	var version int64
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT status, version FROM order_view WHERE tenant = 'default' AND id = ?`, id).Scan(&status, &version)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return status, version
}

// canShip is the shipping service's decision on its read model.
func canShip(t testing.TB, s *store.Store, id string) bool {
	status, _ := ViewOf(t, s, id)
	return status == "paid"
}

// OrderEvent is an event of the orders service, as a consumer receives it.
func OrderEvent(id, stream string, version int64, typ string) envelope.Event {
	return envelope.Event{ID: id, Source: "/orders-service", Type: typ, Stream: stream, Tenant: "default", StreamVersion: version,
		Time: time.Unix(1700000000, 0).UTC(), DataContentType: "application/json", Data: []byte(`{}`)}
}

// HandleWant hands e to the consumer and fails the test unless the
// outcome is want.
func HandleWant(t testing.TB, c *projection.Consumer, e envelope.Event, want projection.Outcome) projection.HandleResult {
	t.Helper()
	res, err := c.Handle(context.Background(), e)
	if err != nil {
		t.Fatalf("handle %s v%d: %v", e.ID, e.StreamVersion, err)
	}
	if res.Outcome != want {
		t.Fatalf("handle %s v%d: outcome %s, want %s", e.ID, e.StreamVersion, res.Outcome, want)
	}
	return res
}

// testOrderScenario: the owner has paid v2 and a compensation produced
// cancelled v3; the consumer receives them out of order and repeated.
func testOrderScenario(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	c := OrderView(t, s, projection.ConsumerOptions{})
	placed := OrderEvent("e1", "order-1", 1, "order.placed")
	paid := OrderEvent("e2", "order-1", 2, "order.paid")
	cancelled := OrderEvent("e3", "order-1", 3, "order.cancelled")

	HandleWant(t, c, placed, projection.Applied)
	HandleWant(t, c, cancelled, projection.Deferred)
	if st, v := ViewOf(t, s, "order-1"); st != "placed" || v != 1 {
		t.Errorf("after the early v3 the read model moved: %s v%d", st, v)
	}
	if d, _ := projection.Consumers(s).Deferred(ctx, "orders", time.Time{}); len(d) != 1 || d[0].Version != 3 || d[0].Expected != 2 {
		t.Errorf("deferred: %+v", d)
	}
	res := HandleWant(t, c, paid, projection.Applied)
	if res.Drained != 1 {
		t.Errorf("v3 drained %d times after v2", res.Drained)
	}
	if st, v := ViewOf(t, s, "order-1"); st != "cancelled" || v != 3 {
		t.Errorf("after v2: %s v%d, want cancelled v3", st, v)
	}
	HandleWant(t, c, paid, projection.Duplicate)
	HandleWant(t, c, cancelled, projection.Duplicate)
	impostor := OrderEvent("e3-other", "order-1", 3, "order.shipped")
	HandleWant(t, c, impostor, projection.Conflict)
	if st, v := ViewOf(t, s, "order-1"); st != "cancelled" || v != 3 {
		t.Errorf("after a conflicting v3: %s v%d", st, v)
	}
	conflicts, _ := projection.Consumers(s).Conflicts(ctx, "orders")
	if len(conflicts) != 1 || conflicts[0].KeptEventID != "e3" || conflicts[0].ConflictingID != "e3-other" || len(conflicts[0].ConflictingEvent) == 0 {
		t.Errorf("conflict evidence: %+v", conflicts)
	}
	if canShip(t, s, "order-1") {
		t.Error("shipping allowed after the cancellation")
	}
	// An older version under a new id is stale: never a rollback.
	HandleWant(t, c, OrderEvent("e2-late", "order-1", 2, "order.paid"), projection.Stale)
	if st, _ := ViewOf(t, s, "order-1"); st != "cancelled" {
		t.Errorf("stale event rolled back: %s", st)
	}
	st, _ := c.Stats(ctx)
	want := projection.ConsumerStats{Consumer: "orders", Applied: 3, Duplicates: 2, Stale: 1, Conflicts: 1}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

func testDeferralSweep(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := OrderView(t, s, projection.ConsumerOptions{DeferFor: time.Minute, Now: clock})
	HandleWant(t, c, OrderEvent("a1", "order-a", 1, "order.placed"), projection.Applied)
	HandleWant(t, c, OrderEvent("a3", "order-a", 3, "order.paid"), projection.Deferred)
	if n, err := c.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("early sweep moved %d (%v)", n, err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if n, err := c.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep moved %d (%v), want 1", n, err)
	}
	q, _ := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "orders", Open: true})
	if len(q) != 1 || q[0].Reason != projection.ReasonDeferredTooLong || q[0].Version != 3 {
		t.Fatalf("quarantine %+v", q)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(q[0].Evidence), &ev); err != nil || ev["expected"] != float64(2) || ev["got"] != float64(3) || ev["waited_seconds"] != float64(120) {
		t.Errorf("evidence %s", q[0].Evidence)
	}
	if st, v := ViewOf(t, s, "order-a"); st != "placed" || v != 1 {
		t.Errorf("a swept event was applied: %s v%d", st, v)
	}
	if d, _ := projection.Consumers(s).Deferred(ctx, "orders", time.Time{}); len(d) != 0 {
		t.Errorf("still deferred: %+v", d)
	}
}

func testUninterpretableQuarantinedAtOnce(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	c := OrderView(t, s, projection.ConsumerOptions{})
	HandleWant(t, c, OrderEvent("b1", "order-b", 1, "order.placed"), projection.Applied)
	HandleWant(t, c, OrderEvent("b2", "order-b", 2, "order.teleported"), projection.Quarantined)
	q, _ := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "orders", Open: true})
	if len(q) != 1 || q[0].Reason != projection.ReasonUninterpretable || q[0].EventID != "b2" || q[0].Attempts != 1 {
		t.Errorf("quarantine %+v", q)
	}
	// Redelivery is a duplicate, not a retry.
	HandleWant(t, c, OrderEvent("b2", "order-b", 2, "order.teleported"), projection.Duplicate)
	if st, v := ViewOf(t, s, "order-b"); st != "placed" || v != 1 {
		t.Errorf("read model moved: %s v%d", st, v)
	}
}

func testTransientApplyErrorChangesNothing(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	fail := true
	c, err := projection.NewConsumer(s, projection.ConsumerOptions{Name: "flaky", Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
		if fail {
			return errors.New("disk hiccup")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := OrderEvent("x1", "order-x", 1, "order.placed")
	if _, err := c.Handle(ctx, e); err == nil {
		t.Fatal("want the error back")
	}
	fail = false
	// Not recorded as a duplicate: the inbox insert rolled back with it.
	HandleWant(t, c, e, projection.Applied)
}

func testStartAtFirstSeen(t *testing.T, h Harness) {
	s := h.Open(t, nil)
	strict := OrderView(t, s, projection.ConsumerOptions{Name: "strict"})
	late := OrderView(t, s, projection.ConsumerOptions{Name: "late", StartAtFirstSeen: true})
	e := OrderEvent("c7", "order-c", 7, "order.paid")
	HandleWant(t, strict, e, projection.Deferred)
	HandleWant(t, late, e, projection.Applied)
	HandleWant(t, late, OrderEvent("c8", "order-c", 8, "order.shipped"), projection.Applied)
}
