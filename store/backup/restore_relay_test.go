package backup_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
)

// slowSink is a destination that stops, at the first event above after,
// until release is closed or its context ends; it records every event
// it sends, and whether the restore had committed when it sent it.
type slowSink struct {
	after     int64
	committed *atomic.Bool
	inFlight  chan struct{} // closed when it holds an event above after
	release   chan struct{}
	once      sync.Once
	beyond    int64 // past this position, it closes passed
	passed    chan struct{}
	onceBy    sync.Once

	mu   sync.Mutex
	sent []sentEvent
}

type sentEvent struct {
	position       int64
	afterTheCommit bool
}

func (p *slowSink) Publish(ctx context.Context, msgs []publish.Message) []publish.Result {
	out := make([]publish.Result, len(msgs))
	for i, m := range msgs {
		e := m.Event
		if e.Position > p.after {
			p.once.Do(func() { close(p.inFlight) })
			select {
			case <-p.release:
			case <-ctx.Done():
			}
		}
		if err := ctx.Err(); err != nil {
			for j := i; j < len(msgs); j++ {
				out[j].Err = err
			}
			return out
		}
		p.mu.Lock()
		p.sent = append(p.sent, sentEvent{e.Position, p.committed.Load()})
		p.mu.Unlock()
		if e.Position > p.beyond {
			p.onceBy.Do(func() { close(p.passed) })
		}
	}
	return out
}

func (p *slowSink) Ping(context.Context) error { return nil }
func (p *slowSink) Close() error               { return nil }

// TestRestoreStopsTheRelay: a relay is sending events 11-40 to a slow
// destination when a restore of a backup that ends at 10 starts. The
// restore takes the relay's lease and waits until the relay has given
// its sends up, so no send of a removed position starts after the
// restore commits (the destination lets its send go on exactly at the
// commit: a test hook). On a restore that did not, the relay sent the
// rest of its batch into a log that no longer has them.
func TestRestoreStopsTheRelay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendN(t, s, "default", "order-1", 10)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "default", "order-1", 30) // positions 11-40: the restore removes them
	var committed atomic.Bool
	sink := &slowSink{after: 10, committed: &committed, inFlight: make(chan struct{}), release: make(chan struct{}),
		beyond: 40, passed: make(chan struct{})}
	r, err := publish.New(publish.Options{Store: s, Publisher: sink, LeaseTTL: 2 * time.Second, RenewEvery: 100 * time.Millisecond, BatchSize: 40})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	defer func() {
		stop()
		<-done
		_ = r.Close()
	}()
	<-sink.inFlight
	defer backup.SetRestoreHooks(nil, func(string) {
		committed.Store(true)
		close(sink.release)
	})()
	if _, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	// The relay takes its lease back and publishes the restored log; wait
	// until it has sent the restore's event (above the old head).
	select {
	case <-sink.passed:
	case err := <-done:
		t.Fatalf("the relay stopped: %v", err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, e := range sink.sent {
		if e.afterTheCommit && e.position > 10 && e.position <= 40 {
			t.Errorf("position %d, which the restore removed, was sent after the restore committed", e.position)
		}
	}
}
