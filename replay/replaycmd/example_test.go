package replaycmd_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay/replaycmd"
	"github.com/eventlite/eventlite/store"
)

// A service's own binary mounts the replay subcommand over its own
// projections, so "myservice replay order_count --dry-run" works as
// "eventlite replay" does. In its main:
//
//	case "replay":
//		os.Exit(replaycmd.Run(ctx, os.Args[2:], replaycmd.Config{
//			Open:             func(ctx context.Context) (*store.Store, error) { return store.Open(ctx, dbPath, nil) },
//			Projections:      []projection.Projection{orderCount, projection.Catalog()},
//			Stdout:           os.Stdout,
//			Stderr:           os.Stderr,
//			StderrIsTerminal: term.IsTerminal(int(os.Stderr.Fd())), // golang.org/x/term
//		}))
func ExampleRun() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "replaycmd-example-")
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "service.db")

	orderCount := projection.Projection{
		Name:   "order_count",
		Types:  []string{"order.placed"},
		Tables: []projection.Table{{Name: "order_count", Schema: `CREATE TABLE {table} (tenant TEXT PRIMARY KEY, orders INTEGER NOT NULL)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("order_count")+` AS t (tenant, orders) VALUES (?, 1)
				ON CONFLICT (tenant) DO UPDATE SET orders = t.orders + 1`, e.Tenant)
			return err
		},
	}
	s, err := store.Open(ctx, dbPath, nil)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 4 {
		e, _ := envelope.New("order.placed", map[string]int{"n": i})
		e.Source = "/shop"
		if _, err := s.Append(ctx, "default", fmt.Sprintf("order-%d", i), store.NoStream, e); err != nil {
			log.Fatal(err)
		}
	}
	r, _ := projection.NewRunner(s, orderCount, nil)
	if _, err := r.CatchUp(ctx); err != nil {
		log.Fatal(err)
	}
	s.Close()

	code := replaycmd.Run(ctx, []string{"order_count", "--dry-run"}, replaycmd.Config{
		Open:        func(ctx context.Context) (*store.Store, error) { return store.Open(ctx, dbPath, nil) },
		Projections: []projection.Projection{orderCount, projection.Catalog()},
		Stdout:      os.Stdout,
		Stderr:      io.Discard, // progress lines; os.Stderr in a real binary
	})
	fmt.Println("exit code", code)
	// Output:
	// replay order_count: no drift: the live read model equals a rebuild of 4 events at position 4 (nothing was swapped)
	//   order_count: missing 0, extra 0, different 0
	// exit code 0
}
