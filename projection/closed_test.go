package projection_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// openClosable opens a store that the test closes itself (storetest's
// cleanup would check a closed store).
func openClosable(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "closed.db"), &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRunnerOnClosedStore: a runner's Run returns an error matching
// store.ErrClosed when its store is closed, before Run or while it
// follows the log. The deadline only keeps a broken runner from hanging
// the test.
func TestRunnerOnClosedStore(t *testing.T) {
	for _, when := range []string{"before Run", "while it runs"} {
		t.Run(when, func(t *testing.T) {
			s := openClosable(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			e, _ := envelope.New("t", map[string]int{"n": 1})
			e.Source = "/test"
			res, err := s.Append(ctx, "default", "a", store.Any, e)
			if err != nil {
				t.Fatal(err)
			}
			r, err := projection.NewRunner(s, countingProjection("counting", nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			if when == "before Run" {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			if when == "while it runs" {
				for {
					changed := s.Changed()
					if cp, _ := projection.Records(s).Checkpoint(ctx, "counting"); cp >= res.LastPosition() {
						break
					}
					select {
					case <-changed:
					case err := <-done:
						t.Fatalf("Run returned early: %v", err)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-done; !errors.Is(err, store.ErrClosed) {
				t.Errorf("Run: %v, want an error matching store.ErrClosed", err)
			}
		})
	}
}

// TestJetStreamConsumerOnClosedStore: RunJetStream returns an error
// matching store.ErrClosed when the consumer's store is closed, whether a
// message waits (it stays unacked for a later run) or none comes.
func TestJetStreamConsumerOnClosedStore(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	js, err := jetstream.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, when := range []string{"before Run, a message waiting", "while it runs, idle"} {
		t.Run(when, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			stream := []string{"WAITING", "IDLE"}[i]
			subject := []string{"waiting.x", "idle.x"}[i]
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}}); err != nil {
				t.Fatal(err)
			}
			s := openClosable(t)
			c, err := projection.NewConsumer(s, projection.ConsumerOptions{Name: "sink", Apply: func(context.Context, *store.Tx, envelope.Event) error { return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				e := envelope.Event{ID: "g1", Source: "/p", Type: "ok", Stream: "a", StreamVersion: 1, Time: time.Unix(1, 0).UTC()}
				b, _ := e.MarshalJSON()
				if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: b}); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() {
				// Redelivered without end unless the closed store ends the run.
				done <- natsjs.RunJetStream(ctx, js, c, natsjs.JetStreamOptions{Stream: stream, MaxDeliver: 1 << 30, NakDelay: time.Millisecond})
			}()
			if i == 1 {
				// The durable consumer exists once Run has started fetching.
				for {
					if _, err := js.Consumer(ctx, stream, "sink"); err == nil {
						break
					}
					select {
					case err := <-done:
						t.Fatalf("Run returned early: %v", err)
					case <-time.After(10 * time.Millisecond):
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-done; !errors.Is(err, store.ErrClosed) {
				t.Errorf("RunJetStream: %v, want an error matching store.ErrClosed", err)
			}
		})
	}
}
