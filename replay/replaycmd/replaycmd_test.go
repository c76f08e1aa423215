package replaycmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay/replaycmd"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// totals is a small read model: one row per stream with its event count.
func totals() projection.Projection {
	return projection.Projection{
		Name:   "totals",
		Tables: []projection.Table{{Name: "totals", Schema: `CREATE TABLE {table} (stream TEXT PRIMARY KEY, n INTEGER NOT NULL)`}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("totals")+` (stream, n) VALUES (?, 1)
				ON CONFLICT (stream) DO UPDATE SET n = n + 1`, e.Stream)
			return err
		},
	}
}

func setup(t *testing.T, events int) *store.Store {
	t.Helper()
	s := storetest.MustOpen(t, nil)
	ctx := context.Background()
	for i := range events {
		e, _ := envelope.New("thing.happened", map[string]int{"i": i})
		e.Source = "/test"
		if _, err := s.Append(ctx, "default", fmt.Sprintf("s-%d", i%7), store.Any, e); err != nil {
			t.Fatal(err)
		}
	}
	r, err := projection.NewRunner(s, totals(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

type outcome struct {
	code           int
	stdout, stderr string
}

func run(ctx context.Context, s *store.Store, cfg replaycmd.Config, args ...string) outcome {
	var out, errb bytes.Buffer
	cfg.Store = s
	cfg.Projections = []projection.Projection{totals(), projection.Catalog()}
	if cfg.Stdout == nil {
		cfg.Stdout = &out
	}
	cfg.Stderr = &errb
	code := replaycmd.Run(ctx, args, cfg)
	if b, ok := cfg.Stdout.(*bytes.Buffer); ok {
		return outcome{code, b.String(), errb.String()}
	}
	return outcome{code, out.String(), errb.String()}
}

// jsonLines decodes every stdout line as a JSON object.
func jsonLines(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line %q is not a JSON object: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestUsageAndNotFound(t *testing.T) {
	s := setup(t, 3)
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, replaycmd.ExitUsage, "want one projection NAME"},
		{[]string{"totals", "catalog"}, replaycmd.ExitUsage, "want one projection NAME"},
		{[]string{"totals", "--frobnicate"}, replaycmd.ExitUsage, "flag provided but not defined"},
		{[]string{"--dry-run=maybe", "totals"}, replaycmd.ExitUsage, "invalid boolean"},
		{[]string{"nosuch"}, replaycmd.ExitNotFound, `no such projection "nosuch" (there are: totals, catalog): a binary replays only the projections it declares; replay an application's projections with the application's own binary, mounting replay/replaycmd with them in Config.Projections (docs/handler-sql.md, "Replaying an application's projections")`},
	} {
		o := run(ctx, s, replaycmd.Config{}, c.args...)
		if o.code != c.code || !strings.Contains(o.stderr, c.want) {
			t.Errorf("replay %q: exit %d, stderr %q; want %d and %q", c.args, o.code, o.stderr, c.code, c.want)
		}
		if c.code == replaycmd.ExitUsage && !strings.Contains(o.stderr, "Usage: replay NAME [--dry-run] [--from-scratch] [--json]") {
			t.Errorf("replay %q: no usage on stderr: %q", c.args, o.stderr)
		}
	}
	if o := run(ctx, s, replaycmd.Config{}, "--help"); o.code != 0 || !strings.Contains(o.stdout, "--from-scratch") {
		t.Errorf("--help: %+v", o)
	}
}

func TestReplayText(t *testing.T) {
	s := setup(t, 40)
	ctx := context.Background()
	o := run(ctx, s, replaycmd.Config{}, "totals")
	if o.code != 0 || !strings.HasPrefix(o.stdout, "replay totals: rebuilt 40 events up to position 40 (watermark 40) in ") ||
		!strings.HasSuffix(o.stdout, ", verified, and swapped it in\n") {
		t.Errorf("replay: %+v", o)
	}
	// Not a terminal: plain progress lines, a phase a line at least.
	for _, want := range []string{"replay totals: rebuild 0/40 events (0%)", "replay totals: swap 40/40 events (100%)", "replay totals: done 40/40 events (100%)"} {
		if !strings.Contains(o.stderr, want+",") {
			t.Errorf("stderr lacks %q:\n%s", want, o.stderr)
		}
	}
	o = run(ctx, s, replaycmd.Config{}, "--dry-run", "totals")
	want := "replay totals: no drift: the live read model equals a rebuild of 40 events at position 40 (nothing was swapped)\n  totals: missing 0, extra 0, different 0\n"
	if o.code != 0 || o.stdout != want {
		t.Errorf("dry run: exit %d, stdout %q; want 0 and %q", o.code, o.stdout, want)
	}
	execSQL(t, s, `UPDATE totals SET n = n + 1 WHERE stream = 's-3'`, `DELETE FROM totals WHERE stream = 's-4'`)
	o = run(ctx, s, replaycmd.Config{}, "totals", "--dry-run")
	want = "replay totals: drift at position 40: 2 rows (missing 1, extra 0, different 1); nothing was swapped\n  totals: missing 1, extra 0, different 1\n"
	if o.code != replaycmd.ExitDrift || o.stdout != want || !strings.Contains(o.stderr, "run the replay without --dry-run") {
		t.Errorf("dry run with drift: %+v; want exit 6 and %q", o, want)
	}
}

func execSQL(t *testing.T, s *store.Store, stmts ...string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		for _, q := range stmts {
			if _, err := tx.ExecContext(context.Background(), q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestReplayJSON(t *testing.T) {
	s := setup(t, 25)
	ctx := context.Background()
	o := run(ctx, s, replaycmd.Config{}, "totals", "--json")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	lines := jsonLines(t, o.stdout)
	for _, l := range lines[:len(lines)-1] {
		for _, k := range []string{"done", "total", "rate", "phase"} {
			if _, ok := l[k]; !ok {
				t.Errorf("progress line %v lacks %q", l, k)
			}
		}
	}
	last := lines[len(lines)-1]
	if last["projection"] != "totals" || last["swapped"] != true || last["checkpoint"] != "25" || last["applied"] != 25.0 {
		t.Errorf("summary %v", last)
	}
	if o.stderr != "" {
		t.Errorf("stderr with --json: %q", o.stderr)
	}
	o = run(ctx, s, replaycmd.Config{}, "totals", "--json", "--dry-run")
	last = jsonLines(t, o.stdout)[len(jsonLines(t, o.stdout))-1]
	if o.code != 0 || last["drift"] != 0.0 || last["missing"] != 0.0 || last["extra"] != 0.0 || last["different"] != 0.0 || last["dry_run"] != true {
		t.Errorf("clean dry run: exit %d, summary %v", o.code, last)
	}
	execSQL(t, s, `INSERT INTO totals VALUES ('ghost', 1)`)
	o = run(ctx, s, replaycmd.Config{}, "totals", "--json", "--dry-run")
	lines = jsonLines(t, o.stdout)
	last = lines[len(lines)-1]
	if o.code != replaycmd.ExitDrift || last["drift"] != 1.0 || last["extra"] != 1.0 || last["missing"] != 0.0 || last["different"] != 0.0 {
		t.Errorf("dry run with drift: exit %d, summary %v", o.code, last)
	}
}

// lockedBuffer lets a test cancel the replay from its first JSON line.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	onLine func()
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.onLine != nil {
		b.onLine()
		b.onLine = nil
	}
	return b.buf.Write(p)
}

// TestInterruptedExits6AndResumes: a replay stopped by its context (as
// SIGINT stops the CLI's) exits 6, and the next run resumes.
func TestInterruptedExits6AndResumes(t *testing.T) {
	s := setup(t, 300)
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{onLine: cancel}
	var errb bytes.Buffer
	code := replaycmd.Run(ctx, []string{"totals", "--json"}, replaycmd.Config{Store: s, Projections: []projection.Projection{totals()}, Stdout: out, Stderr: &errb})
	if code != replaycmd.ExitDrift || !strings.Contains(errb.String(), "run the replay again to resume") {
		t.Fatalf("interrupted: exit %d, stderr %q", code, errb.String())
	}
	o := run(context.Background(), s, replaycmd.Config{}, "totals", "--json")
	lines := jsonLines(t, o.stdout)
	if last := lines[len(lines)-1]; o.code != 0 || last["swapped"] != true {
		t.Errorf("rerun: exit %d, summary %v", o.code, last)
	}
}

func TestBusy(t *testing.T) {
	s := setup(t, 5)
	ctx := context.Background()
	if _, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, projection.RebuildLeaseResource("totals"), "another", time.Minute); err != nil {
		t.Fatal(err)
	}
	if o := run(ctx, s, replaycmd.Config{}, "totals"); o.code != replaycmd.ExitBusy || !strings.Contains(o.stderr, "another replay is running") {
		t.Errorf("while another replay runs: %+v", o)
	}
}

// TestProgressBarOnATerminal: with a terminal, a progress bar (count,
// rate, time) instead of lines.
func TestProgressBarOnATerminal(t *testing.T) {
	s := setup(t, 60)
	o := run(context.Background(), s, replaycmd.Config{StderrIsTerminal: true}, "totals")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	for _, want := range []string{"replay totals: ", "60/60", "events/s", "|"} {
		if !strings.Contains(o.stderr, want) {
			t.Errorf("progress bar lacks %q:\n%q", want, o.stderr)
		}
	}
	if strings.Contains(o.stderr, "events (") {
		t.Errorf("plain lines on a terminal:\n%s", o.stderr)
	}
}

// TestOpenAndClose: with Open instead of Store, the command opens the
// store and closes it.
func TestOpenAndClose(t *testing.T) {
	s := setup(t, 5)
	path := s.Path()
	var opened *store.Store
	var out bytes.Buffer
	code := replaycmd.Run(context.Background(), []string{"catalog"}, replaycmd.Config{
		Open: func(ctx context.Context) (*store.Store, error) {
			var err error
			opened, err = store.Open(ctx, path, nil)
			return opened, err
		},
		Projections: []projection.Projection{projection.Catalog()},
		Stdout:      &out,
	})
	if code != 0 || !strings.Contains(out.String(), "rebuilt 5 events") {
		t.Fatalf("exit %d: %q", code, out.String())
	}
	if _, err := opened.Head(context.Background()); err == nil {
		t.Error("the store the command opened is still open")
	}
}
