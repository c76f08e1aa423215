package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/hashicorp/go-hclog"
	"log"
	"os"
	"path/filepath"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "replay-example-")
	defer os.RemoveAll(dir)
	// Logs go to stderr, quiet unless something needs attention.
	logger := hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn})
	s, err := store.Open(ctx, filepath.Join(dir, "eventlite.db"), &store.Options{Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	// A read model: the total of each order.
	totals := projection.Projection{
		Name:   "order_totals",
		Types:  []string{"order.placed"},
		Tables: []projection.Table{{Name: "order_totals", Schema: `CREATE TABLE {table} (id TEXT PRIMARY KEY, total INTEGER NOT NULL)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			var o struct{ Total int64 }
			if err := json.Unmarshal(e.Data, &o); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("order_totals")+` (id, total) VALUES (?, ?)`, e.Stream, o.Total)
			return err
		},
	}
	for i, total := range []int{30, 12, 7} {
		e, _ := envelope.New("order.placed", map[string]int{"total": total})
		e.Source = "/shop"
		if _, err := s.Append(ctx, "default", fmt.Sprintf("order-%d", i+1), store.NoStream, e); err != nil {
			log.Fatal(err)
		}
	}
	r, _ := projection.NewRunner(s, totals, nil)
	if _, err := r.CatchUp(ctx); err != nil {
		log.Fatal(err)
	}

	// Someone damages the read model; a dry run finds it.
	_ = s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE order_totals SET total = 0 WHERE id = 'order-2'`)
		return err
	})
	res, err := replay.Rebuild(ctx, s, totals, &replay.Options{DryRun: true, Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("dry run at %d: drift %d (missing %d, extra %d, different %d)\n",
		res.Checkpoint, res.Drift.Total, res.Drift.Missing, res.Drift.Extra, res.Drift.Different)

	// The replay rebuilds it and swaps it in.
	res, err = replay.Rebuild(ctx, s, totals, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rebuilt %d events up to %d, swapped: %v\n", res.Applied, res.Checkpoint, res.Swapped)
	res, _ = replay.Rebuild(ctx, s, totals, &replay.Options{DryRun: true, Logger: logger})
	fmt.Printf("dry run: drift %d\n", res.Drift.Total)
	// Output:
	// dry run at 3: drift 1 (missing 0, extra 0, different 1)
	// rebuilt 3 events up to 3, swapped: true
	// dry run: drift 0
}
