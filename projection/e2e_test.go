package projection_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// e2eConsumer is the consumer service of the end-to-end test: it folds
// each aggregate's amounts and counts every application of every event.
func e2eConsumer(s *store.Store) (*projection.Consumer, error) {
	ctx := context.Background()
	err := s.Update(ctx, func(tx *store.Tx) error {
		for _, q := range []string{
			`CREATE TABLE IF NOT EXISTS agg (tenant TEXT, id TEXT, version INTEGER, sum INTEGER, PRIMARY KEY (tenant, id))`,
			`CREATE TABLE IF NOT EXISTS applied (event_id TEXT PRIMARY KEY, n INTEGER NOT NULL)`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return projection.NewConsumer(s, projection.ConsumerOptions{Name: "e2e", Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
		var d struct{ Amount int }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return fmt.Errorf("%w: %v", projection.ErrUninterpretable, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO agg (tenant, id, version, sum) VALUES (?, ?, ?, ?)
			ON CONFLICT (tenant, id) DO UPDATE SET version = excluded.version, sum = sum + excluded.sum`, e.Tenant, e.Stream, e.StreamVersion, d.Amount); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO applied (event_id, n) VALUES (?, 1) ON CONFLICT (event_id) DO UPDATE SET n = n + 1`, e.ID)
		return err
	}})
}

// TestHelperConsumer is not a test: TestEndToEndShuffledWithKills runs
// the test binary again as the consumer service with EVENTLITE_E2E set.
func TestHelperConsumer(t *testing.T) {
	if os.Getenv("EVENTLITE_E2E") != "consumer" {
		return
	}
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
	s, err := store.Open(ctx, os.Getenv("EVENTLITE_DB"), &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		fail(err)
	}
	c, err := e2eConsumer(s)
	if err != nil {
		fail(err)
	}
	nc, err := nats.Connect(os.Getenv("EVENTLITE_NATS"))
	if err != nil {
		fail(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		fail(err)
	}
	err = natsjs.RunJetStream(ctx, js, c, natsjs.JetStreamOptions{Stream: "CHAOS", Batch: 37, AckWait: time.Second, NakDelay: 50 * time.Millisecond})
	fail(fmt.Errorf("RunJetStream returned: %v", err))
}

// TestEndToEndShuffledWithKills: aggregates x versions appended, relayed to
// a real in-process JetStream, then delivered to the consumer shuffled and
// with 30% duplicates, the consumer process killed with SIGKILL along the
// way. The final read model equals the fold of the log, every event is
// applied exactly once, nothing is left deferred.
func TestEndToEndShuffledWithKills(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	aggregates, versions, kills := 100, 20, 4
	if testing.Short() {
		aggregates, versions, kills = 10, 5, 1
	}
	ctx := context.Background()
	dir := t.TempDir()

	// The producer: its store, its outbox, relayed to JetStream.
	producer := storetest.MustOpenPath(t, filepath.Join(dir, "producer.db"), nil)
	want := map[string]int{}
	for v := 1; v <= versions; v++ {
		for a := range aggregates {
			id := fmt.Sprintf("agg-%03d", a)
			amount := rng.IntN(100)
			want[id] += amount
			e, _ := envelope.New("amount.added", map[string]int{"Amount": amount})
			e.Source = "/producer"
			if _, err := producer.Append(ctx, "default", id, store.Exact(int64(v-1)), e); err != nil {
				t.Fatal(err)
			}
		}
	}
	total := aggregates * versions
	srv := natstest.RunJetStream(t, nil)
	nc := srv.Connect(t)
	pub, err := natsjs.NewPublisher(ctx, natsjs.Options{Conn: nc, CreateStream: true})
	if err != nil {
		t.Fatal(err)
	}
	relay, err := publish.New(publish.Options{Store: producer, Publisher: pub, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Run(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages(t, natsjs.DefaultStream)
	if len(msgs) != total {
		t.Fatalf("JetStream holds %d messages, want %d", len(msgs), total)
	}

	// The network: every message again in a shuffled order, 30% of them
	// twice, as separate messages (no broker dedupe on this path).
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CHAOS", Subjects: []string{"chaos.>"}}); err != nil {
		t.Fatal(err)
	}
	var deliveries []jetstream.Msg
	for _, m := range msgs {
		deliveries = append(deliveries, m)
		if rng.IntN(100) < 30 {
			deliveries = append(deliveries, m)
		}
	}
	rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	for _, m := range deliveries {
		out := &nats.Msg{Subject: "chaos.events", Header: nats.Header{}, Data: m.Data()}
		for k, v := range m.Headers() {
			if k != jetstream.MsgIDHeader && k != "Nats-Expected-Stream" {
				out.Header[k] = v
			}
		}
		if _, err := js.PublishMsg(ctx, out); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d events, %d deliveries", total, len(deliveries))

	// The consumer service, killed with SIGKILL several times.
	consumerDB := filepath.Join(dir, "consumer.db")
	cs := storetest.MustOpenPath(t, consumerDB, &store.Options{PollInterval: 10 * time.Millisecond})
	if _, err := e2eConsumer(cs); err != nil { // create its tables before the children race to
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	start := func() *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^TestHelperConsumer$")
		cmd.Env = append(os.Environ(), "EVENTLITE_E2E=consumer", "EVENTLITE_DB="+consumerDB, "EVENTLITE_NATS="+srv.URL())
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	appliedCount := func() int {
		st, err := projection.Consumers(cs).Stats(ctx, "e2e")
		if err != nil {
			t.Fatal(err)
		}
		return int(st.Applied)
	}
	waitApplied := func(n int) {
		t.Helper()
		deadline := time.After(3 * time.Minute)
		for {
			changed := cs.Changed()
			if appliedCount() >= n {
				return
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("waited for %d applied events; %d applied", n, appliedCount())
			}
		}
	}
	for k := range kills {
		cmd := start()
		target := min(total, appliedCount()+1+rng.IntN(total/(kills+1)+1))
		waitApplied(target)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Logf("kill %d after %d applied", k, appliedCount())
	}
	cmd := start()
	waitApplied(total)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	// Every event applied exactly once; the read model is the fold.
	err = cs.Update(ctx, func(tx *store.Tx) error {
		var events, over int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), COALESCE(SUM(n > 1), 0) FROM applied`).Scan(&events, &over); err != nil {
			return err
		}
		if events != total || over != 0 {
			t.Errorf("%d events applied (want %d), %d more than once", events, total, over)
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, version, sum FROM agg`)
		if err != nil {
			return err
		}
		defer rows.Close()
		seen := 0
		for rows.Next() {
			var id string
			var version, sum int
			if err := rows.Scan(&id, &version, &sum); err != nil {
				return err
			}
			seen++
			if version != versions || sum != want[id] {
				t.Errorf("%s: version %d sum %d, want %d and %d", id, version, sum, versions, want[id])
			}
		}
		if seen != aggregates {
			t.Errorf("%d aggregates in the read model, want %d", seen, aggregates)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := projection.Consumers(cs).Deferred(ctx, "e2e", time.Time{}); len(d) != 0 {
		t.Errorf("%d events left deferred", len(d))
	}
	if q, _ := projection.Quarantine(cs).Events(ctx, projection.QuarantineFilter{Open: true}); len(q) != 0 {
		t.Errorf("quarantined: %+v", q)
	}
	if c, _ := projection.Consumers(cs).Conflicts(ctx, ""); len(c) != 0 {
		t.Errorf("conflicts: %+v", c)
	}
	st, _ := projection.Consumers(cs).Stats(ctx, "e2e")
	t.Logf("consumer: %d applied, %d duplicates suppressed, %d stale", st.Applied, st.Duplicates, st.Stale)
}
