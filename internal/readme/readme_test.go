// Package readme_test runs the README's Go example, as written, on both
// engines.
package readme_test

import (
	"bytes"
	"context"
	stdfmt "fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestReadmeGoExample runs the README's "In Go" block on a SQLite file
// and, with EVENTLITE_TEST_POSTGRES, on a PostgreSQL schema, then
// replays its projection on each and finds the same read model. The
// block is the body of readmeExample between its markers, word for word
// (TestReadmeGoExampleIsTheReadmes), "orders.db" aside.
func TestReadmeGoExample(t *testing.T) {
	for _, eng := range []struct {
		name string
		path func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "orders.db") }},
		{"postgres", func(t *testing.T) string { return storetest.PostgresSchema(t, storetest.PostgresBase(t)) }},
	} {
		t.Run(eng.name, func(t *testing.T) {
			var out bytes.Buffer
			readmeExample(t, eng.path(t), &out, func(ctx context.Context, s *store.Store, p projection.Projection) {
				totals := func() map[string]int64 {
					got := map[string]int64{}
					err := s.View(ctx, func(tx *store.ReadTx) error {
						rows, err := tx.QueryContext(ctx, `SELECT id, total FROM order_totals WHERE total > ?`, 0)
						if err != nil {
							return err
						}
						defer rows.Close()
						for rows.Next() {
							var id string
							var n int64
							if err := rows.Scan(&id, &n); err != nil {
								return err
							}
							got[id] = n
						}
						return rows.Err()
					})
					if err != nil {
						t.Fatal(err)
					}
					return got
				}
				want := map[string]int64{"order-1": 42}
				if diff := cmp.Diff(want, totals()); diff != "" {
					t.Errorf("read model (-want +got):\n%s", diff)
				}
				res, err := replay.Rebuild(ctx, s, p, nil)
				if err != nil {
					t.Fatalf("replay: %v", err)
				}
				if res.Applied != 1 {
					t.Errorf("replay applied %d events, want 1", res.Applied)
				}
				if diff := cmp.Diff(want, totals()); diff != "" {
					t.Errorf("read model after the replay (-want +got):\n%s", diff)
				}
			})
			if got, want := out.String(), "order-1: 42\n"; got != want {
				t.Errorf("printed %q, want %q", got, want)
			}
		})
	}
}

// testLog stands for package log in the README's block: Fatal fails the
// test.
type testLog struct{ t *testing.T }

func (l testLog) Fatal(v ...any) { l.t.Helper(); l.t.Fatal(v...) }

// testFmt stands for package fmt in the README's block: it prints to
// the test's buffer.
type testFmt struct{ w *bytes.Buffer }

func (f testFmt) Println(v ...any) { stdfmt.Fprintln(f.w, v...) }

// readmeExample is the README's block with dbPath for "orders.db"; then
// verify, while the store is open, with the block's projection.
func readmeExample(t *testing.T, dbPath string, out *bytes.Buffer, verify func(context.Context, *store.Store, projection.Projection)) {
	log, fmt := testLog{t}, testFmt{out}
	// README begin
	type PlaceOrder struct{ Total int }
	type OrderPlaced struct {
		Total int `json:"total"`
	}
	type Order struct{ Total int }

	check := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	ctx := context.Background()
	s, err := store.Open(ctx, dbPath, nil) // or a postgres:// address; nil: durable defaults
	check(err)
	defer s.Close()
	var reg envelope.Registry // event types and the Go types of their data
	envelope.Register[OrderPlaced](&reg, "order.placed")

	// The aggregate: its state folds from its events; a command decides new ones.
	var ev aggregate.Evolvers[Order]
	aggregate.On(&ev, func(o Order, e aggregate.EventOf[OrderPlaced]) Order { o.Total += e.Payload.Total; return o })
	var dc aggregate.Deciders[Order]
	aggregate.OnCommand(&dc, func(o Order, c aggregate.CommandOf[PlaceOrder]) ([]OrderPlaced, error) {
		return []OrderPlaced{{Total: c.Payload.Total}}, nil
	})
	orders, err := aggregate.New(s, aggregate.Definition[Order]{Name: "order", Registry: &reg, Evolvers: &ev, Deciders: &dc}, nil)
	check(err)

	// The read model: one handler per Go event type, in the runner's transaction.
	h := projection.NewHandlers(&reg)
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[OrderPlaced]) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("order_totals")+` AS t (id, total) VALUES (?, ?)
			ON CONFLICT (id) DO UPDATE SET total = t.total + excluded.total`, e.Stream, e.Data.Total)
		return err
	})
	orderTotals := projection.Projection{Name: "order_totals", Handlers: h,
		Tables: []projection.Table{{Name: "order_totals", Schema: `CREATE TABLE {table} (id TEXT PRIMARY KEY, total BIGINT)`}}}
	r, err := projection.NewRunner(s, orderTotals, nil)
	check(err)
	go r.Run(ctx)

	// A command with an operation id: a retry returns the first result.
	res, err := orders.Handle(ctx, aggregate.Command{Stream: "order-1", OperationID: "req-1", Payload: PlaceOrder{Total: 42}})
	check(err)
	// Read your writes: wait until the read model has the command's events.
	check(projection.WaitFor(ctx, s, "order_totals", res.LastPosition()))
	var total int
	check(s.View(ctx, func(tx *store.ReadTx) error {
		return tx.QueryRowContext(ctx, `SELECT total FROM order_totals WHERE id = ?`, "order-1").Scan(&total)
	}))
	fmt.Println("order-1:", total)
	// README end
	verify(ctx, s, orderTotals)
}

// TestReadmeGoExampleIsTheReadmes: the README's "In Go" block is
// readmeExample's, so the test above runs what users read.
func TestReadmeGoExampleIsTheReadmes(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## In Go\n")
	if ok {
		_, after, ok = strings.Cut(after, "```go\n")
	}
	if !ok {
		t.Fatal(`README.md has no "## In Go" section opening with a go block`)
	}
	block, _, ok := strings.Cut(after, "```\n")
	if !ok {
		t.Fatal("README.md: the go block of \"In Go\" does not end")
	}
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "\t// README begin\n")
	body, _, _ = strings.Cut(body, "\t// README end\n")
	var mine strings.Builder
	for line := range strings.SplitAfterSeq(body, "\n") {
		mine.WriteString(strings.TrimPrefix(line, "\t"))
	}
	want := strings.Replace(block, `"orders.db"`, "dbPath", 1)
	if diff := cmp.Diff(want, mine.String()); diff != "" {
		t.Errorf("the README's block (\"orders.db\" as dbPath) and readmeExample differ (-README +test):\n%s", diff)
	}
}
