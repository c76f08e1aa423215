package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/store"
)

// Histograms are in-process latency histograms of this process's appends,
// relay publishes and projection batches, each observation with its trace
// as an exemplar (trace_id and span_id) when its span is sampled. Pass it
// as the Latency option of store.Options, publish.Options and
// projection.RunnerOptions, and register it on a registry served in the
// OpenMetrics format (Handler): only that format carries exemplars.
//
//	eventlite_append_duration_seconds            histogram  Append and tx.Append calls
//	eventlite_publish_duration_seconds           histogram  a relay round's publish, acks included
//	eventlite_projection_batch_duration_seconds  histogram  a runner's batch that had work
type Histograms struct {
	byOp map[string]prometheus.Histogram
}

var (
	_ prometheus.Collector  = (*Histograms)(nil)
	_ store.LatencyObserver = (*Histograms)(nil)
)

// NewHistograms returns the three latency histograms, empty.
func NewHistograms() *Histograms {
	h := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "eventlite_" + name + "_duration_seconds",
			Help:    help,
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18), // 50us .. 6.5s
		})
	}
	return &Histograms{byOp: map[string]prometheus.Histogram{
		"append":           h("append", "Latency of Append and tx.Append calls."),
		"publish":          h("publish", "Latency of a relay round's publish, acks included."),
		"projection_batch": h("projection_batch", "Latency of a projection runner's batch that had work."),
	}}
}

// ObserveLatency records d for op ("append", "publish" or
// "projection_batch"; others are ignored), with ctx's span as its
// exemplar when the span is sampled.
func (h *Histograms) ObserveLatency(ctx context.Context, op string, d time.Duration) {
	hist, ok := h.byOp[op]
	if !ok {
		return
	}
	sc := trace.SpanContextFromContext(ctx)
	if sc.IsSampled() {
		hist.(prometheus.ExemplarObserver).ObserveWithExemplar(d.Seconds(),
			prometheus.Labels{"trace_id": sc.TraceID().String(), "span_id": sc.SpanID().String()})
		return
	}
	hist.Observe(d.Seconds())
}

// Describe implements prometheus.Collector.
func (h *Histograms) Describe(ch chan<- *prometheus.Desc) {
	for _, hist := range h.byOp {
		hist.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (h *Histograms) Collect(ch chan<- prometheus.Metric) {
	for _, hist := range h.byOp {
		hist.Collect(ch)
	}
}

// Handler serves g's metrics, in the OpenMetrics format (with exemplars)
// to a scraper that asks for it, as Prometheus does, and in the text
// format otherwise.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.HTTPErrorOnError})
}
