package metrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/outbox"
)

// DefaultTimeout bounds the store reads of one scrape unless
// Options.Timeout says otherwise.
const DefaultTimeout = 10 * time.Second

// Options configures a Collector. A nil *Options means the defaults.
type Options struct {
	// Relay, when set, adds its counters (Relay.Stats) to each scrape:
	// the eventlite_relay_* metrics. Default: none, and no relay metrics.
	Relay *publish.Relay
	// Timeout bounds the store reads of one scrape. Default
	// DefaultTimeout.
	Timeout time.Duration
}

// Collector is a prometheus.Collector that reads a store's figures, and
// a relay's counters, on each scrape.
type Collector struct {
	s       *store.Store
	relay   func() publish.Stats // nil: no relay in this process
	timeout time.Duration
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector of s's figures. It reads nothing
// until it is scraped.
func NewCollector(s *store.Store, opts *Options) (*Collector, error) {
	if s == nil {
		return nil, errors.New("metrics: NewCollector needs a store")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("metrics: Options.Timeout %s is negative", o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	c := &Collector{s: s, timeout: o.Timeout}
	if o.Relay != nil {
		c.relay = o.Relay.Stats
	}
	return c, nil
}

// NewRegistry returns a registry holding a collector of s's figures
// (NewCollector with opts) beside the Go runtime's and the process's
// collectors: what the CLI's --metrics and serve's /metrics serve. A
// service that has a registry of its own registers NewCollector on it
// instead.
func NewRegistry(s *store.Store, opts *Options) (*prometheus.Registry, error) {
	c, err := NewCollector(s, opts)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return reg, nil
}

var (
	projectionStatuses = []string{string(projection.StatusRunning), string(projection.StatusIdle), string(projection.StatusStopped), string(projection.StatusRebuilding)}
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
	mPending     = newMetric("outbox_pending", "Events not yet published nor discarded, dead letters and parked events included.", prometheus.GaugeValue)
	mOldestAge   = newMetric("outbox_oldest_unpublished_age_seconds", "Age of the oldest pending event (the relay's lag), 0 when none is pending.", prometheus.GaugeValue)
	mDeadLetters = newMetric("outbox_dead_letters", "Dead letters waiting for an operator (see eventlite dlq).", prometheus.GaugeValue)
	mParked      = newMetric("outbox_parked_streams", "Streams parked behind a dead letter.", prometheus.GaugeValue)
	mParkedRows  = newMetric("outbox_parked_rows", "Pending events of parked streams, dead letters included.", prometheus.GaugeValue)
	mOPublished  = newMetric("outbox_published_total", "Events published.", prometheus.CounterValue)
	mORetried    = newMetric("outbox_retried_total", "Failed publish attempts scheduled for a retry.", prometheus.CounterValue)
	mORequeued   = newMetric("outbox_requeued_total", "Dead letters re-queued by an operator.", prometheus.CounterValue)
	mODead       = newMetric("outbox_dead_lettered_total", "Events dead-lettered.", prometheus.CounterValue)
	mODiscarded  = newMetric("outbox_discarded_total", "Dead letters discarded by an operator.", prometheus.CounterValue)

	mRPublished   = newMetric("relay_published_total", "Events this relay published.", prometheus.CounterValue)
	mRDuplicates  = newMetric("relay_duplicates_total", "Published events the broker already held.", prometheus.CounterValue)
	mRBatches     = newMetric("relay_batches_total", "Batches this relay relayed.", prometheus.CounterValue)
	mRRetries     = newMetric("relay_retries_total", "Failed attempts this relay scheduled for a retry.", prometheus.CounterValue)
	mRDead        = newMetric("relay_dead_lettered_total", "Rows this relay dead-lettered.", prometheus.CounterValue)
	mRUnreachable = newMetric("relay_unreachable_rounds_total", "Rounds in which the destination was unreachable.", prometheus.CounterValue)
	mRLeasesLost  = newMetric("relay_leases_lost_total", "Relay leases this relay lost.", prometheus.CounterValue)
	mRLeaseToken  = newMetric("relay_lease_token", "The relay lease's fencing token held now, 0 while standing by.", prometheus.GaugeValue)
	mRDownSince   = newMetric("relay_unreachable_since_seconds", "Unix time at which the relay found its destination unreachable, 0 while it is reachable.", prometheus.GaugeValue)

	mPCheckpoint  = newMetric("projection_checkpoint", "Position the projection has applied up to.", prometheus.GaugeValue, "projection")
	mPLag         = newMetric("projection_lag_events", "Events the projection is behind the head.", prometheus.GaugeValue, "projection")
	mPQuarantined = newMetric("projection_quarantined", "Open quarantine entries of the projection.", prometheus.GaugeValue, "projection")
	mPStatus      = newMetric("projection_status", "1 for the projection's status (running, idle, stopped, rebuilding), 0 for the others.", prometheus.GaugeValue, "projection", "status")

	mQuarantined = newMetric("quarantined_events", "Open quarantine entries, every consumer.", prometheus.GaugeValue)
	mDeferred    = newMetric("deferred_events", "External events deferred behind a version gap.", prometheus.GaugeValue)
	mConflicts   = newMetric("version_conflicts", "Unresolved version conflicts recorded by consumers.", prometheus.GaugeValue)
	mEffects     = newMetric("effects", "Effect ledger rows by state and kind.", prometheus.GaugeValue, "state", "kind")
	mAwaiting    = newMetric("effects_awaiting_approval_oldest_age_seconds", "Age of the oldest effect awaiting a person's approval, 0 when none waits.", prometheus.GaugeValue)
)

var storeMetrics = []metric{mHead, mAppended, mPending, mOldestAge, mDeadLetters, mParked, mParkedRows, mOPublished, mORetried, mORequeued, mODead, mODiscarded,
	mPCheckpoint, mPLag, mPQuarantined, mPStatus, mQuarantined, mDeferred, mConflicts, mEffects, mAwaiting}

var relayMetrics = []metric{mRPublished, mRDuplicates, mRBatches, mRRetries, mRDead, mRUnreachable, mRLeasesLost, mRLeaseToken, mRDownSince}

// Describe sends the descriptions of every metric the collector reports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range storeMetrics {
		ch <- m.desc
	}
	if c.relay != nil {
		for _, m := range relayMetrics {
			ch <- m.desc
		}
	}
}

// Collect reads the figures and sends them; a read that fails sends an
// invalid metric naming it, which fails the scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
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

	if o, err := outbox.For(c.s).Stats(ctx); err != nil {
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
		since := 0.0
		if !r.UnreachableSince.IsZero() {
			since = float64(r.UnreachableSince.UnixNano()) / 1e9
		}
		emit(mRDownSince, since)
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

	// Counting queries, one read transaction: a scrape lists no row.
	if n, err := c.s.Inventory().Counts(ctx); err != nil {
		fail(mQuarantined, "counts", err)
	} else {
		emit(mQuarantined, float64(n.Quarantined))
		emit(mDeferred, float64(n.Deferred))
		emit(mConflicts, float64(n.Conflicts))
		for _, kind := range effect.Kinds {
			for _, st := range effect.States {
				emit(mEffects, float64(n.EffectsByKind[string(kind)][string(st)]), string(st), string(kind))
			}
		}
		emit(mAwaiting, n.AwaitingApprovalAge.Seconds())
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
