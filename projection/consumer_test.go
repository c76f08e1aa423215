package projection_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// orderView is a consumer's read model of another service's orders.
func orderView(t testing.TB, s *store.Store, opts projection.ConsumerOptions) *projection.Consumer {
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

func viewOf(t testing.TB, s *store.Store, id string) (string, int64) {
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

func orderEvent(id, stream string, version int64, typ string) envelope.Event {
	return envelope.Event{ID: id, Source: "/orders-service", Type: typ, Stream: stream, Tenant: "default", StreamVersion: version,
		Time: time.Unix(1700000000, 0).UTC(), DataContentType: "application/json", Data: []byte(`{}`)}
}

func handle(t testing.TB, c *projection.Consumer, e envelope.Event, want projection.Outcome) projection.HandleResult {
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
