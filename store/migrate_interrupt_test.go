package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
)

// cancelOnWrite is a log output that cancels a context when a line
// containing word is written, and keeps what was written.
type cancelOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	word   string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil && bytes.Contains(p, []byte(w.word)) {
		w.cancel()
	}
	return w.buf.Write(p)
}

func (w *cancelOnWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestMigrationRebuildWarnsAndInterruptChangesNothing: migration 0014
// rewrites the events table, so on a large file it first says so (a
// warning, which the CLI shows by default), and a caller that gives up
// then (its context cancelled as the warning is written) leaves the file
// exactly as it was, at schema 13; the next migration completes it.
func TestMigrationRebuildWarnsAndInterruptChangesNothing(t *testing.T) {
	defer store.SetRebuildWarnEvents(3)()
	path := filepath.Join(t.TempDir(), "old.db")
	var stmts []string
	for v := 1; v <= 5; v++ {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO events (tenant, stream_id, version, event_id, type, source, time, content_type, data, recorded_at)
			VALUES ('default', 's', %d, 'e-%d', 'old.happened', '/old', %d, 'application/json', '{}', %d)`, v, v, v, v),
			fmt.Sprintf(`INSERT INTO outbox (position) VALUES (%d)`, v))
	}
	stmts = append(stmts, `INSERT INTO streams (tenant, stream_id, version, created_at, updated_at) VALUES ('default', 's', 5, 1, 5)`)
	schemaFile(t, path, 13, stmts...)
	const eventsQ = `SELECT * FROM events ORDER BY position`
	before := rawRows(t, path, eventsQ)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOnWrite{word: "rewrites the events table", cancel: cancel}
	lg := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: out})
	_, err := store.Migrate(ctx, path, &store.Options{Logger: lg})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("migration cancelled as it warned: %v, want context.Canceled", err)
	}
	if !strings.Contains(out.String(), "events=5") {
		t.Errorf("the warning does not name the log's size: %q", out.String())
	}
	if v := rawQueryString(t, path, `PRAGMA user_version`); v != "13" {
		t.Fatalf("schema %s after an interrupted migration, want 13", v)
	}
	if diff := cmp.Diff(before, rawRows(t, path, eventsQ)); diff != "" {
		t.Fatalf("events changed by an interrupted migration (-before +after):\n%s", diff)
	}

	res, err := store.Migrate(context.Background(), path, &store.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if res.From != 13 || res.To != store.SchemaVersion() {
		t.Fatalf("migrated %d -> %d, want 13 -> %d", res.From, res.To, store.SchemaVersion())
	}
}
