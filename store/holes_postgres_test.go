package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestHolesPostgres finds, subtracts and records holes on PostgreSQL,
// where its positions never leave one: the test makes them by deleting
// events behind the store's back, and records a removed range as a
// scavenge would. It runs when EVENTLITE_TEST_POSTGRES holds a server's
// URL.
func TestHolesPostgres(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	addr := storetest.PostgresSchema(t, base)
	// Not openAddr: the events deleted below break the invariants on
	// purpose.
	s, err := store.Open(ctx, addr, nil)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer s.Close()
	for i := 1; i <= 7; i++ {
		if _, err := s.Append(ctx, "default", fmt.Sprintf("s-%d", i), store.NoStream, drivertest.Event(t, "t", i)); err != nil {
			t.Fatal(err)
		}
	}

	// Positions 2, 3 and 5 go missing; 5 as a scavenge removes it, with
	// its range recorded. 7 is the newest event: nothing follows it.
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	schema := pgx.Identifier{u.Query().Get("eventlite_schema")}.Sanitize()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`DELETE FROM ` + schema + `.outbox WHERE position IN (2, 3, 5)`,
		`DELETE FROM ` + schema + `.events WHERE position IN (2, 3, 5)`,
		`INSERT INTO ` + schema + `.removed_ranges (from_position, to_position, removed_at) VALUES (5, 5, 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	for _, tc := range []struct {
		after, upto int64
		want        []projection.Hole
	}{
		{0, 7, []projection.Hole{{From: 2, To: 3}}},
		{0, 100, []projection.Hole{{From: 2, To: 3}}}, // past the newest event: no hole
		{3, 7, nil}, // 5 was removed, not lost
		{0, 1, nil},
	} {
		got, err := projection.Records(s).HolesBetween(ctx, tc.after, tc.upto)
		if err != nil {
			t.Fatalf("HolesBetween(%d, %d): %v", tc.after, tc.upto, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("HolesBetween(%d, %d) (-want +got):\n%s", tc.after, tc.upto, diff)
		}
	}

	// A hole recorded twice at one first position keeps the first record.
	for _, by := range []string{"first", "second"} {
		if err := s.Update(ctx, func(tx *store.Tx) error {
			return store.Bookkeeping(inside.Key{}, tx).RecordHole(ctx, projrow.Hole{From: 2, To: 3, DetectedBy: by})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).RecordHole(ctx, projrow.Hole{From: 9, To: 9, DetectedBy: "other"})
	}); err != nil {
		t.Fatal(err)
	}
	recorded, err := projection.Records(s).RecordedHoles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recorded) != 2 || recorded[0].From != 2 || recorded[0].To != 3 || recorded[0].DetectedBy != "first" || recorded[0].DetectedAt.IsZero() ||
		recorded[1].From != 9 || recorded[1].DetectedBy != "other" {
		t.Errorf("recorded holes %+v", recorded)
	}
}
