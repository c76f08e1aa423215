package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
)

// Metrics served by --metrics ADDR at /metrics. Every value is read from
// the store (and the running relay) when Prometheus scrapes; nothing polls
// in between. A scrape whose reads fail answers 500, so Prometheus's own
// "up" turns 0.
//
// The log:
//
//	eventlite_log_head_position                         gauge   newest position in the log
//	eventlite_events_appended_total                     counter events appended (the head: positions are gap free)
//
// The outbox (store.OutboxStats, every tenant):
//
//	eventlite_outbox_pending                            gauge   rows not yet published nor discarded
//	eventlite_outbox_oldest_unpublished_age_seconds     gauge   age of the oldest pending row: the relay's lag
//	eventlite_outbox_dead_letters                       gauge   dead letters waiting for an operator
//	eventlite_outbox_parked_streams                     gauge   streams parked behind a dead letter
//	eventlite_outbox_parked_rows                        gauge   pending rows of parked streams
//	eventlite_outbox_published_total                    counter rows published
//	eventlite_outbox_retried_total                      counter failed attempts scheduled for a retry
//	eventlite_outbox_requeued_total                     counter dead letters re-queued by an operator
//	eventlite_outbox_dead_lettered_total                counter rows dead-lettered
//	eventlite_outbox_discarded_total                    counter dead letters discarded
//
// This relay process (publish.Relay.Stats, since it started):
//
//	eventlite_relay_published_total                     counter events the destination accepted
//	eventlite_relay_duplicates_total                    counter of those, ones the broker already held
//	eventlite_relay_batches_total                       counter batches relayed
//	eventlite_relay_retries_total                       counter failed attempts scheduled for a retry
//	eventlite_relay_dead_lettered_total                 counter rows this relay dead-lettered
//	eventlite_relay_unreachable_rounds_total            counter rounds the destination was down
//	eventlite_relay_leases_lost_total                   counter relay leases lost to another relay
//	eventlite_relay_lease_token                         gauge   the relay lease held now, 0 while standing by
//
// Projections (projection.AllStats), labelled projection:
//
//	eventlite_projection_checkpoint                     gauge   position applied up to
//	eventlite_projection_lag_events                     gauge   events behind the head
//	eventlite_projection_quarantined                    gauge   open quarantine entries
//	eventlite_projection_status{status}                 gauge   1 for the current status (running, idle, stopped, rebuilding), 0 for the others
//
// Consumers and effects:
//
//	eventlite_quarantined_events                        gauge   open quarantine entries, every consumer
//	eventlite_deferred_events                           gauge   external events deferred behind a version gap
//	eventlite_version_conflicts                         gauge   unresolved version conflicts
//	eventlite_effects{state}                            gauge   effect ledger rows by state (RESERVED, EXECUTING, COMPLETED, FAILED, UNKNOWN, COMPENSATED)

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 10 * time.Second

var (
	projectionStatuses = []string{string(store.ProjectionRunning), string(store.ProjectionIdle), string(store.ProjectionStopped), string(store.ProjectionRebuilding)}
	effectStates       = []string{string(store.EffectReserved), string(store.EffectExecuting), string(store.EffectCompleted), string(store.EffectFailed), string(store.EffectUnknown), string(store.EffectCompensated)}
)

// metric is one metric of the collector: its description and type.
type metric struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

func newMetric(name, help string, typ prometheus.ValueType, labels ...string) metric {
	return metric{desc: prometheus.NewDesc("eventlite_"+name, help, labels, nil), typ: typ}
}

var (
	mHead        = newMetric("log_head_position", "Newest position in the log, 0 when it is empty.", prometheus.GaugeValue)
	mAppended    = newMetric("events_appended_total", "Events appended to the log (its head: positions are gap free).", prometheus.CounterValue)
	mPending     = newMetric("outbox_pending", "Outbox rows not yet published nor discarded, dead letters and parked rows included.", prometheus.GaugeValue)
	mOldestAge   = newMetric("outbox_oldest_unpublished_age_seconds", "Age of the oldest pending outbox row (the relay's lag), 0 when none is pending.", prometheus.GaugeValue)
	mDeadLetters = newMetric("outbox_dead_letters", "Dead letters waiting for an operator (see eventlite dlq).", prometheus.GaugeValue)
	mParked      = newMetric("outbox_parked_streams", "Streams parked behind a dead letter.", prometheus.GaugeValue)
	mParkedRows  = newMetric("outbox_parked_rows", "Pending outbox rows of parked streams, dead letters included.", prometheus.GaugeValue)
	mOPublished  = newMetric("outbox_published_total", "Outbox rows published.", prometheus.CounterValue)
	mORetried    = newMetric("outbox_retried_total", "Failed publish attempts scheduled for a retry.", prometheus.CounterValue)
	mORequeued   = newMetric("outbox_requeued_total", "Dead letters re-queued by an operator.", prometheus.CounterValue)
	mODead       = newMetric("outbox_dead_lettered_total", "Outbox rows dead-lettered.", prometheus.CounterValue)
	mODiscarded  = newMetric("outbox_discarded_total", "Dead letters discarded by an operator.", prometheus.CounterValue)

	mRPublished   = newMetric("relay_published_total", "Events this relay published.", prometheus.CounterValue)
	mRDuplicates  = newMetric("relay_duplicates_total", "Published events the broker already held.", prometheus.CounterValue)
	mRBatches     = newMetric("relay_batches_total", "Batches this relay relayed.", prometheus.CounterValue)
	mRRetries     = newMetric("relay_retries_total", "Failed attempts this relay scheduled for a retry.", prometheus.CounterValue)
	mRDead        = newMetric("relay_dead_lettered_total", "Rows this relay dead-lettered.", prometheus.CounterValue)
	mRUnreachable = newMetric("relay_unreachable_rounds_total", "Rounds in which the destination was unreachable.", prometheus.CounterValue)
	mRLeasesLost  = newMetric("relay_leases_lost_total", "Relay leases this relay lost.", prometheus.CounterValue)
	mRLeaseToken  = newMetric("relay_lease_token", "The relay lease's fencing token held now, 0 while standing by.", prometheus.GaugeValue)

	mPCheckpoint  = newMetric("projection_checkpoint", "Position the projection has applied up to.", prometheus.GaugeValue, "projection")
	mPLag         = newMetric("projection_lag_events", "Events the projection is behind the head.", prometheus.GaugeValue, "projection")
	mPQuarantined = newMetric("projection_quarantined", "Open quarantine entries of the projection.", prometheus.GaugeValue, "projection")
	mPStatus      = newMetric("projection_status", "1 for the projection's status (running, idle, stopped, rebuilding), 0 for the others.", prometheus.GaugeValue, "projection", "status")

	mQuarantined = newMetric("quarantined_events", "Open quarantine entries, every consumer.", prometheus.GaugeValue)
	mDeferred    = newMetric("deferred_events", "External events deferred behind a version gap.", prometheus.GaugeValue)
	mConflicts   = newMetric("version_conflicts", "Unresolved version conflicts recorded by consumers.", prometheus.GaugeValue)
	mEffects     = newMetric("effects", "Effect ledger rows by state.", prometheus.GaugeValue, "state")
)

var storeMetrics = []metric{mHead, mAppended, mPending, mOldestAge, mDeadLetters, mParked, mParkedRows, mOPublished, mORetried, mORequeued, mODead, mODiscarded,
	mPCheckpoint, mPLag, mPQuarantined, mPStatus, mQuarantined, mDeferred, mConflicts, mEffects}

var relayMetrics = []metric{mRPublished, mRDuplicates, mRBatches, mRRetries, mRDead, mRUnreachable, mRLeasesLost, mRLeaseToken}

// collector is a prometheus.Collector that reads the store's figures, and
// a relay's counters, on each scrape.
type collector struct {
	s     *store.Store
	relay func() publish.Stats // nil: no relay in this process
}

var _ prometheus.Collector = (*collector)(nil)

// newCollector collects s's figures and, when relay is not nil, its
// counters.
func newCollector(s *store.Store, relay func() publish.Stats) *collector {
	return &collector{s: s, relay: relay}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range storeMetrics {
		ch <- m.desc
	}
	if c.relay != nil {
		for _, m := range relayMetrics {
			ch <- m.desc
		}
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	emit := func(m metric, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, v, labels...)
	}
	// fail reports a read that failed: the scrape fails, naming it.
	fail := func(m metric, what string, err error) {
		ch <- prometheus.NewInvalidMetric(m.desc, fmt.Errorf("%s: %w", what, err))
	}

	if head, err := c.s.Head(ctx); err != nil {
		fail(mHead, "head", err)
	} else {
		emit(mHead, float64(head))
		emit(mAppended, float64(head))
	}

	if o, err := c.s.Outbox().Stats(ctx); err != nil {
		fail(mPending, "outbox stats", err)
	} else {
		emit(mPending, float64(o.Pending))
		emit(mOldestAge, max(o.Lag, 0).Seconds())
		emit(mDeadLetters, float64(o.DeadLetters))
		emit(mParked, float64(o.ParkedStreams))
		emit(mParkedRows, float64(o.Parked))
		emit(mOPublished, float64(o.Published))
		emit(mORetried, float64(o.Retried))
		emit(mORequeued, float64(o.Requeued))
		emit(mODead, float64(o.DeadLettered))
		emit(mODiscarded, float64(o.Discarded))
	}

	if c.relay != nil {
		r := c.relay()
		emit(mRPublished, float64(r.Published))
		emit(mRDuplicates, float64(r.Duplicates))
		emit(mRBatches, float64(r.Batches))
		emit(mRRetries, float64(r.Retrying))
		emit(mRDead, float64(r.DeadLettered))
		emit(mRUnreachable, float64(r.Unreachable))
		emit(mRLeasesLost, float64(r.LeasesLost))
		emit(mRLeaseToken, float64(r.LeaseToken))
	}

	if ps, err := projection.AllStats(ctx, c.s); err != nil {
		fail(mPCheckpoint, "projection stats", err)
	} else {
		for _, p := range ps {
			emit(mPCheckpoint, float64(p.Checkpoint), p.Name)
			emit(mPLag, float64(p.Lag), p.Name)
			emit(mPQuarantined, float64(p.Quarantined), p.Name)
			for _, st := range projectionStatuses {
				emit(mPStatus, b2f(string(p.Status) == st), p.Name, st)
			}
		}
	}

	if qs, err := c.s.Projections().QuarantinedEvents(ctx, store.QuarantineFilter{Open: true}); err != nil {
		fail(mQuarantined, "quarantined events", err)
	} else {
		emit(mQuarantined, float64(len(qs)))
	}
	if ds, err := c.s.Consumers().Deferred(ctx, "", time.Time{}); err != nil {
		fail(mDeferred, "deferred events", err)
	} else {
		emit(mDeferred, float64(len(ds)))
	}
	if cs, err := c.s.Consumers().Conflicts(ctx, ""); err != nil {
		fail(mConflicts, "conflicts", err)
	} else {
		emit(mConflicts, float64(len(cs)))
	}
	if es, err := c.s.Effects().List(ctx, store.EffectFilter{}); err != nil {
		fail(mEffects, "effects", err)
	} else {
		n := make(map[string]int, len(effectStates))
		for _, e := range es {
			n[string(e.State)]++
		}
		for _, st := range effectStates {
			emit(mEffects, float64(n[st]), st)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// metricsAddr is the value of a --metrics flag: HOST:PORT, the host
// possibly empty (every interface), the port a number (0: any free port).
type metricsAddr string

func (a *metricsAddr) String() string { return string(*a) }

func (a *metricsAddr) Set(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want HOST:PORT, such as 127.0.0.1:9464")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535", port)
	}
	*a = metricsAddr(s)
	return nil
}

// metricsServer serves a registry's metrics over HTTP at /metrics.
type metricsServer struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{} // closed when Serve has returned
}

// serveMetrics listens on addr and serves reg at /metrics until Close.
// A listen error (the port is taken, the host is not local) is returned
// at once.
func serveMetrics(addr string, reg *prometheus.Registry, log hclog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w: choose another address, or leave --metrics out", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}),
		ErrorHandling: promhttp.HTTPErrorOnError,
		Timeout:       scrapeTimeout + 5*time.Second,
	}))
	m := &metricsServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	return m, nil
}

// Addr is the address the server listens on (the port chosen, when the
// address asked for port 0).
func (m *metricsServer) Addr() net.Addr { return m.addr }

// Close stops the server: it lets scrapes in flight finish for up to 2 s,
// then closes their connections, and waits for the server to return.
func (m *metricsServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if err != nil {
		err = m.srv.Close()
	}
	<-m.done
	return err
}
