package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
)

// TestBackupUnderLoad stays beside the store's tests: its appending
// children are this package's process helpers (process_test.go).

// ackedAppend is one acknowledged append: its events as the store
// placed them.
type ackedAppend struct {
	keys   []string // tenant/id
	events []logEvent
}

// appendLedger collects acknowledged appends from goroutines and
// children; changed is signalled (without blocking) at every one.
type appendLedger struct {
	mu      sync.Mutex
	appends []ackedAppend
	byChild map[int]int
	local   int
	changed chan struct{}
}

func (l *appendLedger) add(a ackedAppend, child int) {
	l.mu.Lock()
	l.appends = append(l.appends, a)
	if child >= 0 {
		l.byChild[child]++
	} else {
		l.local++
	}
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds over the ledger (checked at every ack).
func (l *appendLedger) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		l.mu.Lock()
		ok := cond()
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-l.changed:
		case <-timeout:
			t.Fatalf("no progress for 2 minutes waiting for %s", what)
		}
	}
}

func (l *appendLedger) snapshot() []ackedAppend {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ackedAppend(nil), l.appends...)
}

// TestBackupUnderLoad backs up a store while 8 goroutines of this process
// and 2 other processes append to it, batches of several events among
// them. The copy must open, pass CheckInvariants and Diagnose, hold every
// append acknowledged before Backup was called where it was acknowledged,
// hold no part of a batch without the rest, and match what Backup reported.
func TestBackupUnderLoad(t *testing.T) {
	ctx := context.Background()
	seed := testSeed(t)
	prefill := 3000
	if testing.Short() {
		prefill = 400
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	dest := filepath.Join(dir, "backup", "copy.db")
	if err := os.Mkdir(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	fillStore(t, path, "pre", prefill)
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	l := &appendLedger{byChild: map[int]int{}, changed: make(chan struct{}, 1)}
	// Two children append from two goroutines each, until they are killed.
	const children = 2
	cs := make([]*procChild, children)
	for i := range cs {
		cs[i] = startProcChild(t, "append", envDB+"="+path, envChild+"="+strconv.Itoa(i),
			envAppends+"=1000000", envChildSeed+"="+strconv.FormatUint(seed+uint64(i), 10))
	}
	var readers sync.WaitGroup
	for i, c := range cs {
		if line, ok := procNextLine(t, c); !ok || line != "READY" {
			t.Fatalf("child %d: first line %q, want READY; stderr:\n%s", i, line, c.stop())
		}
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		readers.Go(func() {
			for line := range c.lines {
				kind, m := procParse(t, line)
				if kind != "ACK" {
					continue
				}
				var a ackedAppend
				for _, e := range m.Events {
					a.keys = append(a.keys, m.Tenant+"/"+e.ID)
					a.events = append(a.events, logEvent{Stream: m.Stream, Position: e.Position, Version: e.Version})
				}
				l.add(a, i)
			}
		})
	}

	// Eight goroutines append batches of 1-4 events to their own streams.
	const workers = 8
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(100+w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				stream := fmt.Sprintf("local-%d-%d", w, i%5)
				evs := make([]envelope.Event, 1+r.IntN(4))
				for j := range evs {
					evs[j] = envelope.Event{ID: fmt.Sprintf("l%d-%d-%d", w, i, j), Source: "/test/backup", Type: "backup.appended",
						Data: fmt.Appendf(nil, `{"w":%d,"i":%d,"j":%d}`, w, i, j)}
				}
				// Three processes contend for one write lock; on a loaded
				// machine one can wait past the busy timeout. ErrBusy is
				// retryable and the events keep their ids, so retry it as
				// the child processes do.
				res, err := s.Append(ctx, "default", stream, store.Any, evs...)
				for try := 0; store.Retryable(err) && try < 100; try++ {
					res, err = s.Append(ctx, "default", stream, store.Any, evs...)
				}
				if err != nil {
					failed.Store(err)
					return
				}
				var a ackedAppend
				for _, e := range res.Events {
					a.keys = append(a.keys, "default/"+e.ID)
					a.events = append(a.events, logEvent{Stream: stream, Position: e.Position, Version: e.StreamVersion})
				}
				l.add(a, -1)
			}
		})
	}
	stopAll := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
		for _, c := range cs {
			_ = c.cmd.Process.Kill()
		}
		readers.Wait()
		for _, c := range cs {
			_ = c.wait()
		}
	}
	defer stopAll()

	l.waitFor(t, "appends from every appender", func() bool {
		return l.local >= 4*workers && l.byChild[0] >= 3 && l.byChild[1] >= 3
	})
	before := l.snapshot()
	var during struct{ local, child0, child1 int }
	first := true
	res, err := backup.Create(ctx, path, dest, &backup.Options{
		PagesPerStep: 4,
		Progress: func(p backup.Progress) {
			if p.Phase != backup.PhaseCopy || !first {
				return
			}
			first = false
			// The copy has begun: let every appender commit more before it
			// goes on, so the backup really runs beside them.
			l.mu.Lock()
			during.local, during.child0, during.child1 = l.local, l.byChild[0], l.byChild[1]
			l.mu.Unlock()
			l.waitFor(t, "appends during the backup", func() bool {
				return l.local > during.local+workers && l.byChild[0] > during.child0 && l.byChild[1] > during.child1
			})
		},
	})
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	stopAll()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("an appender failed: %v", err)
	}
	all := l.snapshot()
	t.Logf("backup of %d events (head %d, %d bytes) in %v; %d appends acknowledged before it began, %d by the end",
		res.Events, res.HeadPosition, res.Bytes, res.Elapsed.Round(time.Millisecond), len(before), len(all))

	// The copy opens and passes doctor.
	cp, err := store.Open(ctx, dest, nil)
	if err != nil {
		t.Fatalf("open the copy: %v", err)
	}
	if err := cp.CheckInvariants(ctx); err != nil {
		t.Errorf("copy: %v", err)
	}
	findings, err := cp.Diagnose(ctx, store.DiagnoseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Severity == store.SeverityProblem {
			t.Errorf("doctor finds a problem in the copy: %+v", f)
		}
	}
	if h, err := cp.Head(ctx); err != nil || h != res.HeadPosition {
		t.Errorf("copy head %d (%v), Backup reported %d", h, err, res.HeadPosition)
	}
	if err := cp.Close(); err != nil {
		t.Fatal(err)
	}
	got := readLog(t, dest)
	if int64(len(got)) != res.Events {
		t.Errorf("the copy holds %d events, Backup reported %d", len(got), res.Events)
	}
	if want := int64(prefill); res.Events < want+int64(len(before)) {
		t.Errorf("Backup reported %d events, fewer than the %d filled plus %d appends acknowledged before", res.Events, want, len(before))
	}
	for _, a := range before {
		for i, k := range a.keys {
			if e, ok := got[k]; !ok || e != a.events[i] {
				t.Errorf("append acknowledged before the backup: %s at %+v; the copy has %+v (present %v)", k, a.events[i], e, ok)
			}
		}
	}
	whole, none := 0, 0
	for _, a := range all {
		present := 0
		for i, k := range a.keys {
			if e, ok := got[k]; ok {
				present++
				if e != a.events[i] {
					t.Errorf("%s acknowledged at %+v, the copy has %+v", k, a.events[i], e)
				}
			}
		}
		switch present {
		case len(a.keys):
			whole++
		case 0:
			none++
		default:
			t.Errorf("the copy holds %d of the %d events of one append (%v): a batch is all or nothing", present, len(a.keys), a.keys)
		}
	}
	// Every event the goroutines appended is explained by an acknowledged
	// append (they all returned before the check).
	acked := map[string]bool{}
	for _, a := range all {
		for _, k := range a.keys {
			acked[k] = true
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "default/l") && !acked[k] {
			t.Errorf("the copy holds %s, which no append acknowledged", k)
		}
	}
	t.Logf("appends in the copy: %d whole, %d after the snapshot", whole, none)
	if none == 0 {
		t.Errorf("no append was acknowledged after the snapshot: the backup did not run beside the appenders")
	}
}

// The helpers below are also the store's other tests' (package
// store/backup's tests keep copies of their own).

// countSnapshots counts the snapshots of a stream.
func countSnapshots(t *testing.T, s *store.Store, tenant, stream string) int {
	t.Helper()
	var n int
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT count(*) FROM snapshots WHERE tenant = $1 AND stream_id = $2`, tenant, stream).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// erasureKey is the subject an event is sealed under ("" for none).
func erasureKey(e envelope.Event) string {
	k, _ := e.Extensions[store.ExtErasureKey].(string)
	return k
}

// fileBytes returns path's bytes (or "<missing>").
func fileBytes(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
