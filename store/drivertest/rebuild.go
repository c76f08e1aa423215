package drivertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
)

// totals counts each stream's events and keeps its newest position.
func totals() projection.Projection {
	return projection.Projection{
		Name:   "totals",
		Tables: []projection.Table{{Name: "totals", Schema: `CREATE TABLE {table} (stream TEXT PRIMARY KEY, n INTEGER NOT NULL, last INTEGER NOT NULL)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("totals")+` AS t (stream, n, last) VALUES (?, 1, ?)
				ON CONFLICT (stream) DO UPDATE SET n = t.n + 1, last = excluded.last`, e.Stream, e.Position)
			return err
		},
	}
}

// readTotals reads the live totals table, one "stream n last" per row.
func readTotals(t *testing.T, s *store.Store) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	if err := s.View(ctx, func(rt *store.ReadTx) error {
		rows, err := rt.QueryContext(ctx, `SELECT stream, n, last FROM totals ORDER BY stream`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var stream string
			var n, last int64
			if err := rows.Scan(&stream, &n, &last); err != nil {
				return err
			}
			out = append(out, fmt.Sprint(stream, " ", n, " ", last))
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// testRebuildSwapsAtTheWatermark: a rebuild proves its shadow reached
// the watermark (the head when it started), catches up with what was
// appended meanwhile and swaps the shadow in with the checkpoint in one
// transaction: afterwards the read model is what a live runner builds
// from scratch (a damaged one is repaired), the checkpoint is the head,
// no shadow table and no rebuild row are left, and the runner goes on
// from the swapped-in checkpoint.
func testRebuildSwapsAtTheWatermark(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, nil)
	p := totals()
	n := 200
	if testing.Short() {
		n = 60
	}
	for i := range n {
		if _, err := s.Append(ctx, "default", fmt.Sprint("s-", i%7), store.Any, Event(t, "t", i)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{BatchSize: 13})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	want := readTotals(t, s)
	if err := s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE totals SET n = n + 100 WHERE stream = 's-0'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	watermark, _ := s.Head(ctx)
	appended := false
	res, err := replay.Rebuild(ctx, s, p, &replay.Options{BatchSize: 7, Progress: func(pr replay.Progress) {
		// An event arrives above the watermark while the shadow is
		// being built: the catch-up must take it in before the swap.
		if pr.Phase == replay.PhaseRebuild && pr.Position > 0 && !appended {
			appended = true
			if _, err := s.Append(ctx, "default", "s-late", store.Any, Event(t, "t", "late")); err != nil {
				t.Error(err)
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	head, _ := s.Head(ctx)
	if !res.Swapped || res.Watermark != watermark || res.Checkpoint != head {
		t.Errorf("rebuild %+v, want swapped, watermark %d, checkpoint at the head %d", res, watermark, head)
	}
	if !appended || head != watermark+1 {
		t.Errorf("no event was appended during the rebuild (head %d, watermark %d)", head, watermark)
	}
	if cp, _ := projection.Records(s).Checkpoint(ctx, p.Name); cp != head {
		t.Errorf("checkpoint %d after the swap, want the head %d", cp, head)
	}
	want = append(want, fmt.Sprint("s-late 1 ", head))
	if diff := cmp.Diff(want, readTotals(t, s)); diff != "" {
		t.Errorf("rebuilt read model (-live from scratch +rebuilt):\n%s", diff)
	}
	if err := s.View(ctx, func(rt *store.ReadTx) error {
		shadow := fmt.Sprintf("totals__rb%d", res.Generation)
		if ok, err := rt.TableExists(ctx, shadow); err != nil || ok {
			t.Errorf("shadow table %s after the swap: exists %v, %v", shadow, ok, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := projection.Rebuilds(s).Load(ctx, p.Name); ok {
		t.Error("the rebuild row outlived the swap")
	}
	if _, err := s.Append(ctx, "default", "s-late", store.Any, Event(t, "t", "later")); err != nil {
		t.Fatal(err)
	}
	if cp, err := r.CatchUp(ctx); err != nil || cp != head+1 {
		t.Errorf("the runner after the swap caught up to %d, %v; want %d", cp, err, head+1)
	}
}
