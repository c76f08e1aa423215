package projection_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// warnSink is an hclog sink that signals each warning a runner logs.
type warnSink struct {
	mu    sync.Mutex
	warns []string
	ch    chan struct{}
}

func (w *warnSink) Accept(_ string, level hclog.Level, msg string, args ...any) {
	if level != hclog.Warn {
		return
	}
	w.mu.Lock()
	w.warns = append(w.warns, msg)
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// TestPostgresRunnerRetriesLostSession: the server ends the writer's
// session while a runner's batch is open (a restart, a network cut): the
// batch fails, Run does not return but retries, the store reconnects,
// and every event is applied exactly once.
func TestPostgresRunnerRetriesLostSession(t *testing.T) {
	s := openPostgres(t)
	ctx := context.Background()
	for i := range 3 {
		if _, err := s.Append(ctx, "acme", "order-1", store.Any, envelope.Event{ID: "e" + string(rune('1'+i)), Type: "order.placed", Source: "/t"}); err != nil {
			t.Fatal(err)
		}
	}
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var calls atomic.Int32
	p := projection.Projection{
		Name:   "applied",
		Tables: []projection.Table{{Name: "applied_ids", Schema: `CREATE TABLE {table} (id TEXT PRIMARY KEY)`}},
		Types:  []string{"order.placed"},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("applied_ids")+` (id) VALUES ($1)`, e.ID); err != nil {
				return err
			}
			if e.ID == "e2" && calls.Add(1) == 1 {
				entered <- struct{}{}
				<-release // the test ends the writer's session meanwhile
			}
			return nil
		},
	}
	sink := &warnSink{ch: make(chan struct{}, 16)}
	log := hclog.NewInterceptLogger(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Error})
	log.RegisterSink(sink)
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{Logger: log, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	<-entered
	admin, err := sql.Open("pgx", os.Getenv(storetest.PostgresEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schema := strings.TrimPrefix(s.Path()[strings.Index(s.Path(), "eventlite_schema="):], "eventlite_schema=")
	if i := strings.IndexByte(schema, '&'); i >= 0 {
		schema = schema[:i]
	}
	var ended int
	if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'eventlite writer ' || $1`, schema).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("ended %d writer sessions of schema %q: %v", ended, schema, err)
	}
	close(release)
	select {
	case <-sink.ch:
	case err := <-done:
		done <- nil // for the deferred stop, which waits for Run
		t.Fatalf("Run returned at the lost session: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := projection.WaitFor(wctx, s, "applied", head); err != nil {
		t.Fatalf("the runner never caught up after the session ended: %v", err)
	}
	var n int
	if err := s.View(ctx, func(rt *store.ReadTx) error {
		return rt.QueryRowContext(ctx, `SELECT count(*) FROM applied_ids`).Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d events applied, want each of 3 once", n)
	}
	if calls.Load() < 2 {
		t.Errorf("the interrupted event was applied %d times, want again after the retry", calls.Load())
	}
}
