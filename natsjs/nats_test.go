package natsjs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
)

func TestParseNATSURL(t *testing.T) {
	tests := []struct {
		in      string
		want    natsjs.Options
		wantErr bool
	}{
		{in: "nats://127.0.0.1:4222", want: natsjs.Options{URL: "nats://127.0.0.1:4222"}},
		{in: "nats://h:1?stream=ORDERS&subject=orders.{tenant}.{stream}", want: natsjs.Options{URL: "nats://h:1", Stream: "ORDERS", Subject: "orders.{tenant}.{stream}"}},
		{in: "nats://h:1?subject=a.%7Btype%7D", want: natsjs.Options{URL: "nats://h:1", Subject: "a.{type}"}},
		{in: "nats://h:1?bogus=1", wantErr: true},
		{in: "nats://h:1?stream=", wantErr: true},
		{in: "http://h:1", wantErr: true},
		{in: "nats://", wantErr: true},
	}
	for _, tt := range tests {
		got, err := natsjs.ParseURL(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil {
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.in, diff)
			}
		}
	}
}

func TestSubjectTemplates(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	e := envelope.Event{ID: "01", Source: "/s", Type: "order.placed v2", Tenant: "acme.eu", Stream: "cart*>1 x", Data: []byte(`{}`),
		DataContentType: "application/json", StreamVersion: 1, Position: 1}
	tests := []struct {
		template, want string
		subjects       []string // of the stream --create-stream makes
	}{
		{"", "eventlite.acme_2Eeu.order_2Eplaced_20v2", []string{"eventlite.>"}},
		{"orders.{tenant}.{stream}", "orders.acme_2Eeu.cart_2A_3E1_20x", []string{"orders.>"}},
		{"x.y.t-{type}.{tenant}", "x.y.t-order_2Eplaced_20v2.acme_2Eeu", []string{"x.y.>"}},
		{"fixed.subject", "fixed.subject", []string{"fixed.subject"}},
	}
	for i, tt := range tests {
		stream := "S" + string(rune('A'+i))
		p, err := natsjs.NewPublisher(context.Background(), natsjs.Options{URL: srv.URL(), Stream: stream, Subject: tt.template, CreateStream: true})
		if err != nil {
			t.Fatalf("%q: %v", tt.template, err)
		}
		if r := p.Publish(context.Background(), publish.Messages(e)); r[0].Err != nil {
			t.Fatalf("%q: %v", tt.template, r[0].Err)
		}
		p.Close()
		msgs := srv.Messages(t, stream)
		if len(msgs) != 1 || msgs[0].Subject() != tt.want {
			t.Errorf("%q: subject %q, want %q", tt.template, msgs[0].Subject(), tt.want)
		}
		if id := msgs[0].Headers().Get(jetstream.MsgIDHeader); id != "acme.eu:01" {
			t.Errorf("message id %q", id)
		}
		js, _ := jetstream.New(srv.Connect(t))
		st, _ := js.Stream(context.Background(), stream)
		cfg := st.CachedInfo().Config
		if diff := cmp.Diff(tt.subjects, cfg.Subjects); diff != "" || cfg.Storage != jetstream.FileStorage || cfg.Duplicates != 10*time.Minute {
			t.Errorf("%q: created stream %v %v %v (-want +got subjects):\n%s", tt.template, cfg.Subjects, cfg.Storage, cfg.Duplicates, diff)
		}
	}
	for _, bad := range []string{"a..b", "a.*", "a.>", "a.{nope}", "a.{type", ".a", "a b.{type}", "x.y.{type}-{tenant}", "x.{tenant}{stream}"} {
		if _, err := natsjs.NewPublisher(context.Background(), natsjs.Options{URL: srv.URL(), Subject: bad, CreateStream: true}); err == nil {
			t.Errorf("template %q accepted", bad)
		}
	}
	// A stream for a template that starts with a placeholder would take
	// every subject: refused.
	if _, err := natsjs.NewPublisher(context.Background(), natsjs.Options{URL: srv.URL(), Subject: "{tenant}.x", CreateStream: true}); err == nil {
		t.Errorf("--create-stream for a template without a fixed prefix accepted")
	}
	if got := natsjs.SanitizeToken("a.b*c>d\te f\x01_"); got != "a_2Eb_2Ac_3Ed_09e_20f_01_5F" {
		t.Errorf("sanitize: %q", got)
	}
}

func TestNATSMissingStream(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	_, err := natsjs.NewPublisher(context.Background(), natsjs.Options{URL: srv.URL()})
	if err == nil || !strings.Contains(err.Error(), "--create-stream") || publish.ClassOf(err) != publish.Fatal {
		t.Fatalf("missing stream: %v", err)
	}
	// Found missing only once the broker is reachable: then Publish says so.
	srv.Shutdown()
	p, err := natsjs.NewPublisher(context.Background(), natsjs.Options{URL: srv.URL()})
	if err != nil {
		t.Fatalf("with the broker down: %v", err)
	}
	defer p.Close()
	e := envelope.Event{ID: "1", Source: "/s", Type: "t", Tenant: "default", Stream: "s"}
	if r := p.Publish(context.Background(), publish.Messages(e)); publish.ClassOf(r[0].Err) != publish.Unreachable {
		t.Fatalf("while down: %v", r[0].Err)
	}
	srv.Start()
	eventually(t, "the missing stream to be reported", 20*time.Second, func() bool {
		r := p.Publish(context.Background(), publish.Messages(e))
		return publish.ClassOf(r[0].Err) == publish.Fatal && strings.Contains(r[0].Err.Error(), "--create-stream")
	})
}

// An attribute that NATS headers cannot carry unchanged makes the event
// one that cannot be encoded: permanent.
func TestNATSUnencodableEvent(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	p := newNATS(t, srv.URL(), natsjs.Options{})
	good := envelope.Event{ID: "1", Source: "/s", Type: "t", Tenant: "default", Stream: "s", StreamVersion: 1}
	bad := good
	bad.ID, bad.Stream, bad.Extensions = "2", "other", map[string]any{"note": "line one\nline two"}
	res := p.Publish(context.Background(), publish.Messages(bad, good))
	if publish.ClassOf(res[0].Err) != publish.Permanent || !strings.Contains(res[0].Err.Error(), "cannot be encoded") {
		t.Errorf("unencodable: %v", res[0].Err)
	}
	if res[1].Err != nil {
		t.Errorf("the other stream: %v", res[1].Err)
	}
	var pe *publish.Error
	if !errors.As(res[0].Err, &pe) || pe.Class != publish.Permanent {
		t.Errorf("not a *publish.Error: %T", res[0].Err)
	}
}
