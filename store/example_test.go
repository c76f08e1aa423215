package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// orderEvent returns an event of type typ whose data is v, with fixed id
// and source so that the examples print the same output every run.
func orderEvent(id, typ string, v any) envelope.Event {
	e, err := envelope.New(typ, v)
	if err != nil {
		log.Fatal(err)
	}
	e.ID = id
	e.Source = "/shop"
	return e
}

// Open creates the database file when it is missing and brings its schema
// up to date. Options left zero (or nil options) take their defaults:
// synchronous=FULL, no logger.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), &store.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	head, err := s.Head(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("head position of a new store:", head)
	// Output:
	// head position of a new store: 0
}

// Append writes events to one stream only when the stream is at the
// expected version: store.NoStream for a stream that must not exist yet,
// store.Exact(n) for a stream at version n, store.Any for no condition.
func ExampleStore_Append() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), &store.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	res, err := s.Append(ctx, "default", "order-1", store.NoStream,
		orderEvent("ev-1", "order.placed", map[string]int{"total": 30}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("order-1 at version %d, position %d\n", res.Version, res.LastPosition())

	// The next append states the version it decided on.
	res, err = s.Append(ctx, "default", "order-1", store.Exact(res.Version),
		orderEvent("ev-2", "order.paid", map[string]int{"amount": 30}),
		orderEvent("ev-3", "order.shipped", nil))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("order-1 at version %d, positions %v\n", res.Version, res.Positions())
	// Output:
	// order-1 at version 1, position 1
	// order-1 at version 3, positions [2 3]
}

// Two writers decided on the same version: the second append stores
// nothing and returns a *ConflictError, which matches ErrConflict. The
// caller reloads the stream and decides again.
func ExampleConflictError() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), &store.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	if _, err := s.Append(ctx, "default", "order-1", store.NoStream,
		orderEvent("ev-1", "order.placed", map[string]int{"total": 30})); err != nil {
		log.Fatal(err)
	}
	// Both writers read version 1; the first one's append wins.
	if _, err := s.Append(ctx, "default", "order-1", store.Exact(1),
		orderEvent("ev-2", "order.paid", map[string]int{"amount": 30})); err != nil {
		log.Fatal(err)
	}
	_, err = s.Append(ctx, "default", "order-1", store.Exact(1),
		orderEvent("ev-3", "order.cancelled", nil))

	fmt.Println("conflict:", errors.Is(err, store.ErrConflict))
	var conflict *store.ConflictError
	if errors.As(err, &conflict) {
		fmt.Printf("stream %s: expected %s, actual version %d\n", conflict.Stream, conflict.Expected, conflict.Actual)
	}
	v, err := s.StreamVersion(ctx, "default", "order-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("order-1 still at version", v)
	// Output:
	// conflict: true
	// stream order-1: expected version 1, actual version 2
	// order-1 still at version 2
}

// ReadStream iterates over one stream's events in version order, reading
// page by page; a missing stream yields an error matching ErrNotFound.
func ExampleStore_ReadStream() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), &store.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	if _, err := s.Append(ctx, "default", "order-1", store.NoStream,
		orderEvent("ev-1", "order.placed", map[string]int{"total": 30}),
		orderEvent("ev-2", "order.paid", map[string]int{"amount": 30})); err != nil {
		log.Fatal(err)
	}

	for e, err := range s.ReadStream(ctx, "default", "order-1", store.ReadStreamOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("version %d: %s %s\n", e.StreamVersion, e.Type, e.Data)
	}
	for _, err := range s.ReadStream(ctx, "default", "order-2", store.ReadStreamOptions{}) {
		fmt.Println("order-2 not found:", errors.Is(err, store.ErrNotFound))
		break
	}
	// Output:
	// version 1: order.placed {"total":30}
	// version 2: order.paid {"amount":30}
	// order-2 not found: true
}

// ReadAll iterates over the global log in position order, every stream
// of a tenant, optionally of some event types only.
func ExampleStore_ReadAll() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), &store.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	for i, stream := range []string{"order-1", "order-2"} {
		if _, err := s.Append(ctx, "default", stream, store.NoStream,
			orderEvent(fmt.Sprintf("placed-%d", i+1), "order.placed", map[string]int{"total": 10 * (i + 1)}),
			orderEvent(fmt.Sprintf("paid-%d", i+1), "order.paid", map[string]int{"amount": 10 * (i + 1)})); err != nil {
			log.Fatal(err)
		}
	}

	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{Tenant: "default", Types: []string{"order.placed"}}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("position %d: %s %s\n", e.Position, e.Stream, e.Data)
	}
	// Output:
	// position 1: order-1 {"total":10}
	// position 3: order-2 {"total":20}
}

// Update runs a closure in one write transaction: its writes commit when
// it returns nil and are undone when it returns an error. View reads one
// consistent snapshot.
func ExampleStore_Update() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), &store.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// A table of the application's own, beside the log.
	err = s.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INTEGER NOT NULL)`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO stock (sku, qty) VALUES ('tea-01', 5)`)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	// A closure that fails leaves nothing behind.
	errOutOfStock := errors.New("out of stock")
	err = s.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE stock SET qty = qty - 7 WHERE sku = 'tea-01'`); err != nil {
			return err
		}
		var qty int
		if err := tx.QueryRowContext(ctx, `SELECT qty FROM stock WHERE sku = 'tea-01'`).Scan(&qty); err != nil {
			return err
		}
		if qty < 0 {
			return errOutOfStock
		}
		return nil
	})
	fmt.Println("update:", err)

	err = s.View(ctx, func(tx *store.ReadTx) error {
		var qty int
		if err := tx.QueryRowContext(ctx, `SELECT qty FROM stock WHERE sku = 'tea-01'`).Scan(&qty); err != nil {
			return err
		}
		fmt.Println("tea-01 in stock:", qty)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// update: out of stock
	// tea-01 in stock: 5
}
