package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

var testTypes = []string{"order.placed", "order.paid", "order.shipped", "order.cancelled"}

type amountData struct {
	Amount int64 `json:"amount"`
}

// ledger is a read model where a mix of two states shows: a totals row
// (events, sum, last position) and one entry per event. Any snapshot of a
// consistent ledger has totals.events = count(entries), totals.sum =
// sum(entries.amount) and totals.last_position = the newest entry. fail,
// when set, may fail an event.
func ledger(name string, types []string, fail func(e envelope.Event) error) projection.Projection {
	totals, entries := name+"_totals", name+"_entries"
	return projection.Projection{
		Name:  name,
		Types: types,
		Tables: []projection.Table{
			{Name: totals, Schema: `CREATE TABLE {table} (
				id            INTEGER PRIMARY KEY CHECK (id = 1),
				events        INTEGER NOT NULL,
				sum           INTEGER NOT NULL,
				last_position INTEGER NOT NULL,
				tampered      INTEGER NOT NULL DEFAULT 0)`},
			{Name: entries, Schema: `CREATE TABLE {table} (
				position INTEGER PRIMARY KEY,
				tenant   TEXT    NOT NULL,
				stream   TEXT    NOT NULL,
				type     TEXT    NOT NULL,
				amount   INTEGER NOT NULL);
				CREATE INDEX {table}_by_stream ON {table} (tenant, stream)`},
		},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			if fail != nil {
				if err := fail(e); err != nil {
					return err
				}
			}
			var d amountData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table(entries)+` (position, tenant, stream, type, amount) VALUES (?, ?, ?, ?, ?)`,
				e.Position, e.Tenant, e.Stream, e.Type, d.Amount); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table(totals)+` (id, events, sum, last_position) VALUES (1, 1, ?, ?)
				ON CONFLICT (id) DO UPDATE SET events = events + 1, sum = sum + excluded.sum, last_position = excluded.last_position`,
				d.Amount, e.Position)
			return err
		},
	}
}

// appendRandom appends n events in random batches to a few tenants and
// streams, with random types and amounts.
func appendRandom(t testing.TB, s *store.Store, rng *rand.Rand, n int) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for written := 0; written < n; {
		k := min(1+rng.IntN(8), n-written)
		evs := make([]envelope.Event, k)
		for i := range evs {
			e, err := envelope.New(testTypes[rng.IntN(len(testTypes))], amountData{Amount: rng.Int64N(1000)})
			if err != nil {
				t.Fatal(err)
			}
			e.Source = "/test"
			e.Time = base.Add(time.Duration(rng.IntN(1e6)) * time.Millisecond)
			evs[i] = e
		}
		tenant := []string{"default", "acme"}[rng.IntN(2)]
		if _, err := s.Append(ctx, tenant, fmt.Sprintf("s-%d", rng.IntN(20)), store.Any, evs...); err != nil {
			t.Fatal(err)
		}
		written += k
	}
}

// catchUp brings the live projection up to the head with a runner.
func catchUp(t testing.TB, s *store.Store, p projection.Projection) int64 {
	t.Helper()
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{BatchSize: 97})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := r.CatchUp(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// dump reads a table in full, in the order of all its columns, each
// value with its Go type: equal dumps are equal tables, byte for byte.
func dump(t testing.TB, s *store.Store, table string) []string {
	t.Helper()
	var out []string
	err := s.View(context.Background(), func(rt *store.ReadTx) error {
		var ncol int
		if err := rt.QueryRowContext(context.Background(), `SELECT count(*) FROM pragma_table_info(?)`, table).Scan(&ncol); err != nil {
			return err
		}
		if ncol == 0 {
			out = []string{"(no table)"}
			return nil
		}
		order := make([]string, ncol)
		for i := range order {
			order[i] = fmt.Sprint(i + 1)
		}
		rows, err := rt.QueryContext(context.Background(), `SELECT * FROM "`+table+`" ORDER BY `+strings.Join(order, ", "))
		if err != nil {
			return err
		}
		defer rows.Close()
		vals := make([]any, ncol)
		ptrs := make([]any, ncol)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%#v", vals))
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// liveState is everything of a projection's that a replay must leave
// alone unless it swaps: its tables, with their indexes, and checkpoint.
type liveState struct {
	Tables     map[string][]string
	Schema     []string
	Checkpoint int64
}

func snapshot(t testing.TB, s *store.Store, p projection.Projection) liveState {
	t.Helper()
	st := liveState{Tables: map[string][]string{}}
	for _, tb := range p.Tables {
		st.Tables[tb.Name] = dump(t, s, tb.Name)
	}
	err := s.View(context.Background(), func(rt *store.ReadTx) error {
		rows, err := rt.QueryContext(context.Background(), `SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master
			WHERE tbl_name NOT LIKE '%\_\_rb%' ESCAPE '\' ORDER BY name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var typ, name, tbl, sql string
			if err := rows.Scan(&typ, &name, &tbl, &sql); err != nil {
				return err
			}
			for _, tb := range p.Tables {
				if tbl == tb.Name {
					st.Schema = append(st.Schema, typ+" "+name+": "+sql)
				}
			}
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Checkpoint, err = projection.Records(s).Checkpoint(context.Background(), p.Name); err != nil {
		t.Fatal(err)
	}
	return st
}

// shadowTables lists the tables named like a rebuild's shadows.
func shadowTables(t testing.TB, s *store.Store) []string {
	t.Helper()
	var out []string
	err := s.View(context.Background(), func(rt *store.ReadTx) error {
		rows, err := rt.QueryContext(context.Background(), `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%\_\_rb%' ESCAPE '\' ORDER BY name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			out = append(out, n)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// foldLedger is the ledger computed straight from the log: its entries'
// and totals' dumps as dump prints them.
func foldLedger(t testing.TB, s *store.Store, types []string) (totals, entries []string) {
	t.Helper()
	var n, sum, last int64
	for e, err := range s.ReadAll(context.Background(), store.ReadAllOptions{Types: types}) {
		if err != nil {
			t.Fatal(err)
		}
		var d amountData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, fmt.Sprintf("%#v", []any{e.Position, e.Tenant, e.Stream, e.Type, d.Amount}))
		n, sum, last = n+1, sum+d.Amount, e.Position
	}
	if n > 0 {
		totals = []string{fmt.Sprintf("%#v", []any{int64(1), n, sum, last, int64(0)})}
	}
	return totals, entries
}

// checkLedgerIsFold fails unless the live ledger is exactly the fold of
// the log.
func checkLedgerIsFold(t testing.TB, s *store.Store, name string, types []string) {
	t.Helper()
	totals, entries := foldLedger(t, s, types)
	if got := dump(t, s, name+"_totals"); fmt.Sprint(got) != fmt.Sprint(totals) {
		t.Errorf("%s_totals:\n got %v\nwant %v", name, got, totals)
	}
	got := dump(t, s, name+"_entries")
	if len(got) != len(entries) {
		t.Errorf("%s_entries: %d rows, want %d", name, len(got), len(entries))
		return
	}
	for i := range got {
		if got[i] != entries[i] {
			t.Errorf("%s_entries row %d:\n got %s\nwant %s", name, i, got[i], entries[i])
			return
		}
	}
}

func execSQL(t testing.TB, s *store.Store, stmts ...string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		for _, q := range stmts {
			if _, err := tx.ExecContext(context.Background(), q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
