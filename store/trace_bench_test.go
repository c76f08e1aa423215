package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// discardExporter drops what the batch processor hands it: the cost
// measured is the spans', not an exporter's.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkAppendTracing appends one event per call at sync=NORMAL (so
// the CPU cost shows, not the fsync) to two stores, alternately: "off"
// with no TracerProvider (otel's unset global), "on" with an SDK
// provider sampling every span into a batch processor. It reports both
// rates and x_off, the traced rate over the untraced one.
func BenchmarkAppendTracing(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardExporter{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	dir := b.TempDir()
	off := openBenchStore(b, filepath.Join(dir, "off.db"), "NORMAL")
	on, err := store.Open(context.Background(), filepath.Join(dir, "on.db"), &store.Options{Synchronous: "NORMAL", TracerProvider: tp})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { on.Close() })
	g := newBenchGen(1)
	ctx := context.Background()
	stream := func(i int) string { return fmt.Sprintf("order-%03d", i%100) }
	var evsOff, evsOn [][]envelope.Event
	prep := func(k int) {
		evsOff, evsOn = evsOff[:0], evsOn[:0]
		for range k {
			r := g.raw(1)
			evsOff = append(evsOff, benchEnvelopes(r))
			evsOn = append(evsOn, benchEnvelopes(r))
		}
	}
	side := func(name string, s *store.Store, evs *[][]envelope.Event) *benchSide {
		return &benchSide{name: name, run: func(k int) {
			for i := range k {
				if _, err := s.Append(ctx, "acme", stream(i), store.Any, (*evs)[i]...); err != nil {
					b.Fatal(err)
				}
			}
		}}
	}
	so, sn := side("off", off, &evsOff), side("on", on, &evsOn)
	runPaired(b, 500, prep, so, sn)
	b.ReportMetric(so.rate(1), "off_ev/s")
	b.ReportMetric(sn.rate(1), "on_ev/s")
	if r := so.rate(1); r > 0 {
		b.ReportMetric(sn.rate(1)/r, "x_off")
	}
	if so.ops > 0 && sn.ops > 0 {
		b.ReportMetric(float64(so.dur.Nanoseconds())/float64(so.ops), "off_ns/op")
		b.ReportMetric(float64(sn.dur.Nanoseconds())/float64(sn.ops), "on_ns/op")
	}
}
