package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/sqlitedriver"
	"github.com/eventlite/eventlite/store/storetest"
)

// schemaFile builds a file at schema upTo from the migration files, as
// an older eventlite left it, and runs stmts in it.
func schemaFile(t *testing.T, path string, upTo int, stmts ...string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("internal", "sqlitedriver", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range entries[:upTo] {
		b, err := os.ReadFile(filepath.Join("internal", "sqlitedriver", "migrations", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, string(b))
	}
	all = append(all, fmt.Sprintf("PRAGMA user_version = %d", upTo), "PRAGMA journal_mode = WAL")
	storetest.RawExec(t, path, append(all, stmts...)...)
}

// eventsBefore16 are the statements that turn a file's events table back
// into its layout before migration 0016 (the four attributes as columns
// of their own, data in the middle, the removed-id trigger), for tests
// that roll a store's file back to an older schema.
var eventsBefore16 = []string{
	`PRAGMA foreign_keys = OFF`,
	`CREATE TABLE events_old (
    position       INTEGER PRIMARY KEY,
    tenant         TEXT    NOT NULL,
    stream_id      TEXT    NOT NULL,
    version        INTEGER NOT NULL CHECK (version >= 1),
    event_id       TEXT    NOT NULL,
    type           TEXT    NOT NULL,
    source         TEXT    NOT NULL,
    time           INTEGER NOT NULL,
    content_type   TEXT    NOT NULL,
    data_schema    TEXT    NOT NULL DEFAULT '',
    data           BLOB,
    correlation_id TEXT    NOT NULL DEFAULT '',
    causation_id   TEXT    NOT NULL DEFAULT '',
    extensions     TEXT,
    recorded_at    INTEGER NOT NULL,
    UNIQUE (tenant, stream_id, version),
    UNIQUE (tenant, event_id))`,
	`INSERT INTO events_old SELECT position, tenant, stream_id, version, event_id, type, source, time, content_type, ` +
		sqlitedriver.DataSchemaSQL + `, data, ` + sqlitedriver.CorrelationIDSQL + `, ` + sqlitedriver.CausationIDSQL + `, ` +
		sqlitedriver.ExtensionsSQL + `, recorded_at FROM events ORDER BY position`,
	`DROP TABLE events`,
	`ALTER TABLE events_old RENAME TO events`,
	`CREATE TRIGGER events_removed_id BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM removed_event_ids r WHERE r.tenant = NEW.tenant AND r.event_id = NEW.event_id)
BEGIN
    SELECT RAISE(ABORT, 'UNIQUE constraint failed: events.tenant, events.event_id (a scavenge removed the event)');
END`,
}

// eventsColumnsQ reads every event of a file as the columns it had before
// migration 0016, whichever layout the file has (after16: the joined
// attrs).
func eventsColumnsQ(after16 bool) string {
	if !after16 {
		return `SELECT position, tenant, stream_id, version, event_id, type, source, time, content_type,
			data_schema, data, correlation_id, causation_id, extensions, recorded_at FROM events ORDER BY position`
	}
	return `SELECT position, tenant, stream_id, version, event_id, type, source, time, content_type, ` +
		sqlitedriver.DataSchemaSQL + `, data, ` + sqlitedriver.CorrelationIDSQL + `, ` + sqlitedriver.CausationIDSQL + `, ` +
		sqlitedriver.ExtensionsSQL + `, recorded_at FROM events ORDER BY position`
}

// rawRows returns every row q reads from the file at path, as text.
func rawRows(t *testing.T, path, q string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		out = append(out, fmt.Sprintf("%#v", vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A file of schema 13 (positions from AUTOINCREMENT, a version and an
// updated time in every streams row) migrates to 14 exactly: every event
// and outbox row, every index and trigger, the streams' lifecycle columns;
// SQLite's sequence, ahead of the highest position as after the newest
// events were removed, becomes the position floor, and the next append
// continues above it. A stream's version and updated time read the same
// from the events as they did from the dropped columns.
func TestMigratePositionsWithoutAutoincrement(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	var stmts []string
	type oldStream struct {
		tenant, id     string
		n              int
		first, deleted int
	}
	streams := []oldStream{{"default", "a", 3, 2, 0}, {"default", "b", 4, 1, 0}, {"t2", "c", 2, 1, 0}}
	pos := 0
	recorded := map[string]int64{}
	for _, st := range streams {
		for v := 1; v <= st.n; v++ {
			pos++
			ext, data := "NULL", fmt.Sprintf("'{\"v\":%d}'", v)
			if v == 2 {
				ext, data = `'{"traceparent":"00-x"}'`, "NULL"
			}
			rec := int64(1_700_000_000_000_000_000 + pos*1000)
			recorded[st.tenant+"/"+st.id] = rec
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO events (tenant, stream_id, version, event_id, type, source, time, content_type,
				data_schema, data, correlation_id, causation_id, extensions, recorded_at)
				VALUES ('%s', '%s', %d, '%s-%d', 'old.happened', '/old', %d, 'application/json', 's', %s, 'corr', 'cause', %s, %d)`,
				st.tenant, st.id, v, st.id, v, pos, data, ext, rec))
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO outbox (position, attempts, published_at) VALUES (%d, 1, %d)`, pos, pos))
		}
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO streams (tenant, stream_id, version, created_at, updated_at, first_version, deleted)
			VALUES ('%s', '%s', %d, 5, %d, %d, %d)`, st.tenant, st.id, st.n, recorded[st.tenant+"/"+st.id], st.first, st.deleted))
	}
	// A scavenge removed a's first event; positions up to 12 were handed
	// out, the newest three (10-12) removed since.
	stmts = append(stmts,
		`INSERT INTO removed_event_ids (tenant, event_id) VALUES ('default', 'a-1')`,
		`INSERT INTO removed_ranges (from_position, to_position, removed_at) VALUES (1, 1, 1), (10, 12, 1)`,
		`DELETE FROM outbox WHERE position = 1`,
		`DELETE FROM events WHERE position = 1`,
		`UPDATE sqlite_sequence SET seq = 12 WHERE name = 'events'`)
	schemaFile(t, path, 13, stmts...)

	eventsQ := eventsColumnsQ(false)
	const (
		// Migration 0015, which runs too, drops the outbox rows that
		// appends wrote and nothing touched since, and the index of
		// pending rows (the relay's watermark stands for them).
		outboxQ = `SELECT * FROM outbox WHERE published_at IS NOT NULL OR discarded_at IS NOT NULL OR attempts > 0
			OR dead_at IS NOT NULL OR last_error IS NOT NULL OR first_failed_at IS NOT NULL ORDER BY position`
		streamsQ = `SELECT tenant, stream_id, created_at, first_version, deleted FROM streams ORDER BY tenant, stream_id`
		// Migration 0016 drops the removed-id trigger: the writer checks.
		schemaQ  = `SELECT type, name, tbl_name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND name NOT IN ('outbox_pending', 'events_removed_id') AND name NOT LIKE 'stats\_%' ESCAPE '\' ORDER BY name`
		removedQ = `SELECT * FROM removed_ranges UNION ALL SELECT tenant, event_id, NULL FROM removed_event_ids`
	)
	before := map[string][]string{}
	for _, q := range []string{eventsQ, outboxQ, streamsQ, schemaQ, removedQ} {
		before[q] = rawRows(t, path, q)
	}
	if len(before[eventsQ]) != 8 || len(before[schemaQ]) < 3 {
		t.Fatalf("the schema-13 file holds %d events and %d indexes and triggers", len(before[eventsQ]), len(before[schemaQ]))
	}

	s, err := store.Open(ctx, path, nil) // migrates
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatalf("after the migration: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for q, want := range before {
		after := q
		if q == eventsQ {
			after = eventsColumnsQ(true)
		}
		if diff := cmp.Diff(want, rawRows(t, path, after)); diff != "" {
			t.Errorf("%s changed in the migration (-before +after):\n%s", q, diff)
		}
	}
	if got := rawRows(t, path, `SELECT * FROM position_floor`); !cmp.Equal(got, []string{`[]interface {}{1, 12}`}) {
		t.Errorf("position floor %v, want the one row (1, 12)", got)
	}
	if sqlText := rawQueryString(t, path, `SELECT sql FROM sqlite_master WHERE name = 'events'`); strings.Contains(sqlText, "AUTOINCREMENT") {
		t.Errorf("events still has AUTOINCREMENT: %s", sqlText)
	}
	if cols := rawRows(t, path, `SELECT name FROM pragma_table_info('streams') WHERE name IN ('version', 'updated_at')`); len(cols) != 0 {
		t.Errorf("streams keeps the columns %v", cols)
	}
	if v := rawQueryString(t, path, `PRAGMA user_version`); v != fmt.Sprint(store.SchemaVersion()) {
		t.Errorf("schema %s after Open", v)
	}

	s = storetest.MustOpenPath(t, path, nil)
	// Versions and updated times read from the events, as the dropped
	// columns held them.
	for _, st := range streams {
		var got []store.StreamInfo
		for si, err := range s.Streams(ctx, st.tenant) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, si)
		}
		found := false
		for _, si := range got {
			if si.Stream == st.id {
				found = true
				if si.Version != int64(st.n) || !si.UpdatedAt.Equal(time.Unix(0, recorded[st.tenant+"/"+st.id])) || !si.CreatedAt.Equal(time.Unix(0, 5)) {
					t.Errorf("stream %s: %+v, want version %d, updated %d", st.id, si, st.n, recorded[st.tenant+"/"+st.id])
				}
			}
		}
		if !found {
			t.Errorf("stream %s/%s not listed: %+v", st.tenant, st.id, got)
		}
	}
	// The next position is above the floor, not above the head (9).
	r, err := s.Append(ctx, "default", "b", store.Exact(4), envelope.Event{Source: "/new", Type: "new.happened"})
	if err != nil {
		t.Fatal(err)
	}
	if r.FirstPosition() != 13 || r.Version != 5 {
		t.Errorf("first append after the migration: position %d version %d, want 13 and 5", r.FirstPosition(), r.Version)
	}
	// The writer refuses a removed id; the foreign keys are on.
	_, err = s.Append(ctx, "default", "a", store.Any, envelope.Event{ID: "a-1", Source: "/new", Type: "new.happened"})
	var de *store.DuplicateError
	if !errors.As(err, &de) {
		t.Errorf("append of the removed id a-1: %v, want a *DuplicateError", err)
	}
	err = s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO outbox (position) VALUES (999)`)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Errorf("an outbox row without its event after the migration: %v, want a foreign key error", err)
	}
}
