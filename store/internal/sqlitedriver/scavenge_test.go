package sqlitedriver_test

import (
	"context"
	"database/sql"
	"reflect"
	"testing"

	"github.com/eventlite/eventlite/store/internal/sqlitedriver"
	_ "modernc.org/sqlite"
)

// TestMergeRemovedRange pins how a removed run joins the recorded ranges
// it touches: the one just before (ending at or past from-1), the one
// starting just after to, both, or none; the ranges it covers go.
func TestMergeRemovedRange(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+t.TempDir()+"/r.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE removed_ranges (from_position INTEGER PRIMARY KEY,
		to_position INTEGER NOT NULL, removed_at INTEGER NOT NULL) WITHOUT ROWID`); err != nil {
		t.Fatal(err)
	}
	var ex sqlitedriver.Exec
	type rg struct{ From, To int64 }
	steps := []struct {
		add  rg
		got  rg
		left []rg
	}{
		{rg{10, 12}, rg{10, 12}, []rg{{10, 12}}},                     // alone
		{rg{13, 14}, rg{10, 14}, []rg{{10, 14}}},                     // joins the one before
		{rg{20, 21}, rg{20, 21}, []rg{{10, 14}, {20, 21}}},           // a gap: alone
		{rg{18, 19}, rg{18, 21}, []rg{{10, 14}, {18, 21}}},           // joins the one after
		{rg{15, 17}, rg{10, 21}, []rg{{10, 21}}},                     // joins both
		{rg{30, 30}, rg{30, 30}, []rg{{10, 21}, {30, 30}}},           // alone again
		{rg{12, 13}, rg{10, 21}, []rg{{10, 21}, {30, 30}}},           // inside one: unchanged
		{rg{40, 41}, rg{40, 41}, []rg{{10, 21}, {30, 30}, {40, 41}}}, // alone
		{rg{31, 39}, rg{30, 41}, []rg{{10, 21}, {30, 41}}},           // both again
		{rg{1, 9}, rg{1, 21}, []rg{{1, 21}, {30, 41}}},               // the first range
	}
	for i, st := range steps {
		from, to, err := ex.MergeRemovedRange(ctx, db, st.add.From, st.add.To, int64(i))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := (rg{from, to}); got != st.got {
			t.Fatalf("step %d: merged %v into %v, want %v", i, st.add, got, st.got)
		}
		rows, err := db.QueryContext(ctx, `SELECT from_position, to_position FROM removed_ranges ORDER BY from_position`)
		if err != nil {
			t.Fatal(err)
		}
		var left []rg
		for rows.Next() {
			var r rg
			if err := rows.Scan(&r.From, &r.To); err != nil {
				t.Fatal(err)
			}
			left = append(left, r)
		}
		rows.Close()
		if !reflect.DeepEqual(left, st.left) {
			t.Fatalf("step %d: recorded %v, want %v", i, left, st.left)
		}
	}
}
