package projection_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// OrderPlaced is an event's data, registered for the type
// "order.placed".
type OrderPlaced struct {
	Total int `json:"total"`
}

func shopRegistry() *envelope.Registry {
	var reg envelope.Registry
	envelope.Register[OrderPlaced](&reg, "order.placed")
	return &reg
}

// orderTotals is a read model: the total of each placed order, one row per
// order, in a table the projection owns. It is typed: one handler per Go
// event type, which receives the decoded data and the event's metadata;
// the projection reads the event types its handlers' types are
// registered for.
func orderTotals(reg *envelope.Registry) projection.Projection {
	h := projection.NewHandlers(reg)
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[OrderPlaced]) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("order_totals")+` (id, total) VALUES (?, ?)`, e.Stream, e.Data.Total)
		return err
	})
	return projection.Projection{
		Name:     "order_totals",
		Handlers: h,
		Tables:   []projection.Table{{Name: "order_totals", Schema: `CREATE TABLE {table} (id TEXT PRIMARY KEY, total INTEGER NOT NULL)`}},
	}
}

// The untyped form hands Apply each event as stored, for tools that read
// every type (the catalog): here, a count of events per type.
func ExampleProjection_untyped() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "projection-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	counts := projection.Projection{
		Name:   "type_counts",
		Tables: []projection.Table{{Name: "type_counts", Schema: `CREATE TABLE {table} (type TEXT PRIMARY KEY, n INTEGER NOT NULL)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("type_counts")+` AS t (type, n) VALUES (?, 1)
				ON CONFLICT (type) DO UPDATE SET n = t.n + 1`, e.Type)
			return err
		},
	}
	for i, typ := range []string{"order.placed", "order.paid", "order.placed"} {
		e, _ := envelope.New(typ, map[string]int{"i": i})
		e.Source = "/shop"
		if _, err := s.Append(ctx, "default", "order-1", store.Any, e); err != nil {
			log.Fatal(err)
		}
	}
	r, err := projection.NewRunner(s, counts, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := r.CatchUp(ctx); err != nil {
		log.Fatal(err)
	}
	err = s.View(ctx, func(tx *store.ReadTx) error {
		rows, err := tx.QueryContext(ctx, `SELECT type, n FROM type_counts ORDER BY type`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var typ string
			var n int
			if err := rows.Scan(&typ, &n); err != nil {
				return err
			}
			fmt.Println(typ, n)
		}
		return rows.Err()
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// order.paid 1
	// order.placed 2
}

// A runner keeps the read model up to date in the background; WaitFor
// makes a request read its own write: it returns once the projection has
// applied the position that Append returned.
func ExampleWaitFor() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "projection-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	logger := hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn})
	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), &store.Options{Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	reg := shopRegistry()
	r, err := projection.NewRunner(s, orderTotals(reg), &projection.RunnerOptions{Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			log.Fatal(err)
		}
	}()

	// A request appends an event...
	e, err := reg.Encode("order.placed", OrderPlaced{Total: 30})
	if err != nil {
		log.Fatal(err)
	}
	e.Source = "/shop"
	res, err := s.Append(ctx, "default", "order-1", store.NoStream, e)
	if err != nil {
		log.Fatal(err)
	}
	// ...and waits for the read model to include it before reading it,
	// for a bounded time: a request does not wait forever.
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := projection.WaitFor(waitCtx, s, "order_totals", res.LastPosition()); err != nil {
		log.Fatal(err)
	}
	err = s.View(ctx, func(tx *store.ReadTx) error {
		var total int
		if err := tx.QueryRowContext(ctx, `SELECT total FROM order_totals WHERE id = ?`, "order-1").Scan(&total); err != nil {
			return err
		}
		fmt.Println("order-1 total:", total)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// order-1 total: 30
}
