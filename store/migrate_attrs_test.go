package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestMigrateEventAttrs: a file at schema 15, whose events keep
// dataschema, correlationid, causationid and the extensions in columns
// of their own, migrates to the joined attrs column with every event
// reading back the same (every combination of the four, no data, data
// larger than a page), the removed-id trigger gone, and a removed id
// still refused.
func TestMigrateEventAttrs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := attrCombinations(t)
	in = append(in, envelope.Event{ID: "no-data", Source: "/t", Type: "t.happened", CorrelationID: "c"},
		drivertest.EventWithID(t, "big", "t.happened", map[string]any{"pad": strings.Repeat("x", 10_000)}))
	if _, err := s.Append(ctx, "acme", "order-1", store.NoStream, in...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "other", "o-1", store.NoStream, drivertest.EventWithID(t, "gone", "t.happened", nil)); err != nil {
		t.Fatal(err)
	}
	want := readAllEvents(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Back to schema 15; a scavenge removed tenant other's event "gone".
	storetest.RawExec(t, path, eventsBefore16...)
	storetest.RawExec(t, path,
		`INSERT INTO removed_event_ids (tenant, event_id) VALUES ('other', 'gone')`,
		`DELETE FROM events WHERE event_id = 'gone'`,
		`DELETE FROM streams WHERE tenant = 'other'`,
		`INSERT INTO removed_ranges (from_position, to_position, removed_at) VALUES (19, 19, 1)`,
		`INSERT INTO position_floor (one, position) VALUES (1, 19) ON CONFLICT (one) DO UPDATE SET position = 19`,
		`PRAGMA user_version = 15`)
	// The old columns hold the attributes as the events have them.
	if got := rawRows(t, path, `SELECT event_id, data_schema, correlation_id, causation_id, extensions FROM events
		WHERE event_id IN ('e-0', 'e-7', 'e-8', 'no-data') ORDER BY position`); !cmp.Equal(got, []string{
		`[]interface {}{"e-0", "", "", "", interface {}(nil)}`,
		`[]interface {}{"e-7", "https://example.com/schema/7", "corr-7", "cause-7", interface {}(nil)}`,
		`[]interface {}{"e-8", "", "", "", "{\"n\":8,\"ok\":true,\"traceparent\":\"00-8\"}"}`,
		`[]interface {}{"no-data", "", "c", "", interface {}(nil)}`,
	}) {
		t.Fatalf("the schema-15 file's attribute columns:\n%s", strings.Join(got, "\n"))
	}
	before := rawRows(t, path, eventsColumnsQ(false))

	s = storetest.MustOpenPath(t, path, nil) // migrates
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatalf("after the migration: %v", err)
	}
	if diff := cmp.Diff(want[:len(want)-1], readAllEvents(t, s)); diff != "" {
		t.Errorf("events read after the migration (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before, rawRows(t, path, eventsColumnsQ(true))); diff != "" {
		t.Errorf("the events' columns (-schema 15 +attrs):\n%s", diff)
	}
	if n := rawQueryString(t, path, `SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name NOT LIKE 'stats\_%' ESCAPE '\'`); n != "0" {
		t.Errorf("%s triggers after the migration, want none", n)
	}
	if n := rawQueryString(t, path, `SELECT count(*) FROM events WHERE attrs IS NULL`); n != "2" {
		t.Errorf("%s events without attributes store NULL, want 2 (e-0 and big)", n)
	}
	_, err = s.Append(ctx, "other", "o-2", store.Any, drivertest.EventWithID(t, "gone", "t.happened", nil))
	var de *store.DuplicateError
	if !errors.As(err, &de) {
		t.Errorf("append of the removed id: %v, want a *DuplicateError", err)
	}
	if _, err := s.Append(ctx, "acme", "o-2", store.Any, drivertest.EventWithID(t, "gone", "t.happened", nil)); err != nil {
		t.Errorf("tenant acme appends the id another tenant's scavenge removed: %v", err)
	}
}

// readAllEvents reads the whole log.
func readAllEvents(t *testing.T, s *store.Store) []envelope.Event {
	t.Helper()
	var all []envelope.Event
	for e, err := range s.ReadAll(context.Background(), store.ReadAllOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	return all
}
