package publish_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
)

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkRelayTracing drains benchEvents events, each with a stored
// traceparent, to an in-process JetStream server, alternately with
// tracing off (no TracerProvider) and on (an SDK provider sampling every
// span into a batch processor, W3C per-hop headers). It reports both
// rates and x_off, the traced rate over the untraced one.
func BenchmarkRelayTracing(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardExporter{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	srv := natstest.RunJetStream(b, nil)
	path := filepath.Join(b.TempDir(), "bench.db")
	s, err := store.Open(context.Background(), path, &store.Options{TracerProvider: tp})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fillStore(b, s, benchEvents) // traced: every event stores its origin
	db := rawDB(b, path)
	nc := srv.Connect(b)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1024))
	if err != nil {
		b.Fatal(err)
	}
	resetRound(b, db, js) // creates the stream
	pub, err := natsjs.NewPublisher(context.Background(), natsjs.Options{Conn: nc})
	if err != nil {
		b.Fatal(err)
	}
	var offTime, onTime time.Duration
	run := func(o publish.Options) time.Duration {
		b.StopTimer()
		resetRound(b, db, js)
		o.Store, o.Publisher, o.Once = s, pub, true
		r, err := publish.New(o)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := r.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			offTime += run(publish.Options{})
			onTime += run(publish.Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
		} else {
			onTime += run(publish.Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
			offTime += run(publish.Options{})
		}
	}
	b.StopTimer()
	msgs := float64(b.N * benchEvents)
	b.ReportMetric(msgs/offTime.Seconds(), "off_msg/s")
	b.ReportMetric(msgs/onTime.Seconds(), "on_msg/s")
	b.ReportMetric(offTime.Seconds()/onTime.Seconds(), "x_off")
	b.ReportMetric(float64(offTime.Nanoseconds())/msgs, "off_ns/msg")
	b.ReportMetric(float64(onTime.Nanoseconds())/msgs, "on_ns/msg")
}
