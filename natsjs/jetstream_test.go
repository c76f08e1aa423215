package natsjs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestJetStreamPoisonAndTransient: an undecodable message is quarantined
// and terminated (never redelivered forever); a message whose handling
// keeps failing is redelivered up to MaxDeliver, then quarantined; good
// messages, binary or structured, are applied and acknowledged.
func TestJetStreamPoisonAndTransient(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := natstest.RunJetStream(t, nil)
	nc := srv.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}}); err != nil {
		t.Fatal(err)
	}
	s := storetest.MustOpen(t, nil)
	c, err := projection.NewConsumer(s, projection.ConsumerOptions{Name: "sink", Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
		if e.Type == "always.fails" {
			return errors.New("database of a partner is down")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	good := envelope.Event{ID: "g1", Source: "/p", Type: "ok", Stream: "a", StreamVersion: 1, Time: time.Unix(1, 0).UTC()}
	structured, _ := good.MarshalJSON()
	failing := envelope.Event{ID: "f1", Source: "/p", Type: "always.fails", Stream: "b", StreamVersion: 1, Time: time.Unix(1, 0).UTC()}
	failingJSON, _ := failing.MarshalJSON()
	binary := &nats.Msg{Subject: "in.x", Header: nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"g2"}, "ce-source": {"/p"},
		"ce-type": {"ok"}, "ce-subject": {"a"}, "ce-streamversion": {"2"}, "ce-datacontenttype": {"application/json"}}, Data: []byte(`{"x":1}`)}
	for _, m := range []*nats.Msg{
		{Subject: "in.x", Data: []byte("this is not a CloudEvent")},
		{Subject: "in.x", Data: structured},
		binary,
		{Subject: "in.x", Data: failingJSON},
	} {
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- natsjs.RunJetStream(ctx, js, c, natsjs.JetStreamOptions{Stream: "IN", MaxDeliver: 3, NakDelay: 10 * time.Millisecond, AckWait: time.Second})
	}()
	deadline := time.After(time.Minute)
	for {
		changed := s.Changed()
		q, _ := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "sink", Open: true})
		if len(q) == 2 {
			reasons := map[projection.QuarantineReason]int{}
			for _, e := range q {
				reasons[e.Reason] = e.Attempts
			}
			if reasons[projection.ReasonUndecodable] != 1 || reasons[projection.ReasonTooManyDelivered] != 3 {
				t.Errorf("quarantine reasons/attempts: %v", reasons)
			}
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("quarantine has %d entries", len(q))
		}
	}
	st, _ := c.Stats(ctx)
	if st.Applied != 2 {
		t.Errorf("applied %d, want 2 (one structured, one binary)", st.Applied)
	}
	// Nothing is left to redeliver: every message was acked or terminated.
	cons, err := js.Consumer(ctx, "IN", "sink")
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.After(30 * time.Second)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending == 0 && info.NumPending == 0 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("consumer still has %d unacked, %d pending", info.NumAckPending, info.NumPending)
		case <-time.After(20 * time.Millisecond): // polling the server's view
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunJetStream: %v", err)
	}
}
