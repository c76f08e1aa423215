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

// orderTotals is a read model: the total of each placed order, one row per
// order, in a table the projection owns.
func orderTotals() projection.Projection {
	return projection.Projection{
		Name:   "order_totals",
		Types:  []string{"order.placed"},
		Tables: []projection.Table{{Name: "order_totals", Schema: `CREATE TABLE {table} (id TEXT PRIMARY KEY, total INTEGER NOT NULL)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			o, err := envelope.DecodeData[struct{ Total int }](e)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO `+tx.Table("order_totals")+` (id, total) VALUES (?, ?)`, e.Stream, o.Total)
			return err
		},
	}
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

	r, err := projection.NewRunner(s, orderTotals(), &projection.RunnerOptions{Logger: logger})
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
	e, err := envelope.New("order.placed", map[string]int{"total": 30})
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
