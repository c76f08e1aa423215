package metrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/metrics"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/storetest"
)

// scrape GETs url and returns every sample by its series as printed,
// such as `eventlite_effects{state="UNKNOWN"}`.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func appendTo(t *testing.T, s *store.Store, stream string, n int) store.AppendResult {
	t.Helper()
	evs := make([]envelope.Event, n)
	for i := range evs {
		e, err := envelope.New("t", map[string]int{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		e.Source = "/test"
		evs[i] = e
	}
	res, err := s.Append(context.Background(), "default", stream, store.Any, evs...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestMetricsCollector plants one of each figure, relays what can go out,
// and scrapes the collector through a real HTTP server.
func TestMetricsCollector(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendTo(t, s, "a", 3)
	poison := appendTo(t, s, "poison", 2)
	// A relay dead-lettered poison's first event: its stream is parked.
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "earlier-relay", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, []outboxmark.Failure{{Position: poison.FirstPosition(), Error: "message too large"}})
	}); err != nil {
		t.Fatal(err)
	}
	if err := store.Inner(inside.Key{}, s).ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	// A projection at position 2 with no runner; a consumer's quarantined
	// event, deferral and conflict; an effect reserved and one unknown.
	if err := s.Update(ctx, func(tx *store.Tx) error {
		if err := store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, "orders", string(projection.StatusActive), ""); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "orders", 2, nil); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "c", Reason: string(projection.ReasonUninterpretable), EventID: "q1"}); err != nil {
			return err
		}
		if _, _, err := store.Bookkeeping(inside.Key{}, tx).Defer(ctx, inside.Deferred{Consumer: "c", Tenant: "default", Subject: "o-1", Version: 3, EventID: "e3",
			Event: []byte(`{}`), Expected: 2, FirstSeen: time.Now(), Reason: "gap"}); err != nil {
			return err
		}
		return store.Bookkeeping(inside.Key{}, tx).RecordConflict(ctx, inside.Conflict{Consumer: "c", Tenant: "default", Subject: "o-1", Version: 2,
			KeptEventID: "a", ConflictingID: "b", ConflictingEvent: []byte(`{}`)})
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := effect.Steps(inside.Key{}, effect.For(s)).Reserve(ctx, "default", "email:1"); err != nil {
		t.Fatal(err)
	}
	_, _ = effect.For(s).Run(ctx, "default", "charge:1", func(context.Context) (string, error) { return "", effect.ErrOutcomeUnknown })

	// A drain publishes a's 3 events and stops at the dead letter.
	rl, err := publish.New(publish.Options{Store: s, Publisher: publish.NewStdout(io.Discard), Once: true})
	if err != nil {
		t.Fatal(err)
	}
	var inc *publish.IncompleteError
	if err := rl.Run(ctx); !errors.As(err, &inc) {
		t.Fatalf("drain: %v, want rows left behind the dead letter", err)
	}

	c, err := metrics.NewCollector(s, &metrics.Options{Relay: rl})
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	got := scrape(t, srv.URL+"/metrics")

	if age, ok := got["eventlite_outbox_oldest_unpublished_age_seconds"]; !ok || age < 0 {
		t.Errorf("oldest unpublished age: %v (present %v)", age, ok)
	}
	if got["eventlite_relay_batches_total"] < 1 {
		t.Errorf("relay batches %v", got["eventlite_relay_batches_total"])
	}
	want := map[string]float64{
		"eventlite_log_head_position":                                           5,
		"eventlite_events_appended_total":                                       5,
		"eventlite_outbox_pending":                                              2,
		"eventlite_outbox_dead_letters":                                         1,
		"eventlite_outbox_parked_streams":                                       1,
		"eventlite_outbox_parked_rows":                                          2,
		"eventlite_outbox_published_total":                                      3,
		"eventlite_outbox_dead_lettered_total":                                  1,
		"eventlite_outbox_discarded_total":                                      0,
		"eventlite_relay_published_total":                                       3,
		"eventlite_relay_dead_lettered_total":                                   0,
		"eventlite_relay_lease_token":                                           0, // released when the drain ended
		"eventlite_relay_leases_lost_total":                                     0,
		"eventlite_relay_unreachable_since_seconds":                             0,
		"eventlite_projection_checkpoint{projection=\"orders\"}":                2,
		"eventlite_projection_lag_events{projection=\"orders\"}":                3,
		"eventlite_projection_status{projection=\"orders\",status=\"idle\"}":    1,
		"eventlite_projection_status{projection=\"orders\",status=\"running\"}": 0,
		"eventlite_quarantined_events":                                          1,
		"eventlite_deferred_events":                                             1,
		"eventlite_version_conflicts":                                           1,
		"eventlite_effects{kind=\"external\",state=\"RESERVED\"}":               1,
		"eventlite_effects{kind=\"external\",state=\"UNKNOWN\"}":                1,
		"eventlite_effects{kind=\"external\",state=\"COMPLETED\"}":              0,
		"eventlite_effects{kind=\"irreversible\",state=\"RESERVED\"}":           0,
		"eventlite_effects_awaiting_approval_oldest_age_seconds":                0,
	}
	picked := map[string]float64{}
	for k := range want {
		if v, ok := got[k]; ok {
			picked[k] = v
		}
	}
	if diff := cmp.Diff(want, picked); diff != "" {
		t.Errorf("scraped metrics (-want +got):\n%s", diff)
	}
}

// Effects are counted by state and kind, and the oldest request for
// approval is aged by the store's clock.
func TestMetricsEffectsAwaitingApproval(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := storetest.MustOpen(t, &store.Options{Now: clock})
	ask := func(key string, kind effect.Kind) effect.Effect {
		e, err := effect.For(s).Do(ctx, effect.Intent{Tenant: "default", Key: key, Kind: kind, NeedsApproval: true, RequestedBy: "svc", Args: map[string]string{"k": key}},
			func(context.Context, json.RawMessage) (string, error) { return "ref", nil })
		if !errors.Is(err, effect.ErrAwaitingApproval) {
			t.Fatal(err)
		}
		return e
	}
	scrapeAll := func() map[string]float64 {
		reg := prometheus.NewRegistry()
		mustRegister(t, reg, s, nil)
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
		defer srv.Close()
		return scrape(t, srv.URL+"/metrics")
	}
	const age = "eventlite_effects_awaiting_approval_oldest_age_seconds"
	if got := scrapeAll()[age]; got != 0 {
		t.Errorf("no request: age %v", got)
	}
	first := ask("delete:1", effect.Irreversible)
	advance(30 * time.Second)
	ask("refund:1", effect.External)
	advance(60 * time.Second)
	got := scrapeAll()
	if got[age] != 90 {
		t.Errorf("oldest request: age %v, want 90", got[age])
	}
	if got[`eventlite_effects{kind="irreversible",state="AWAITING_APPROVAL"}`] != 1 || got[`eventlite_effects{kind="external",state="AWAITING_APPROVAL"}`] != 1 {
		t.Errorf("by kind: %v", got)
	}
	// Decided, the oldest no longer waits.
	if _, err := effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "delete:1", ArgsHash: first.ArgsHash(), By: "alice"}); err != nil {
		t.Fatal(err)
	}
	got = scrapeAll()
	if got[age] != 60 || got[`eventlite_effects{kind="irreversible",state="APPROVED"}`] != 1 {
		t.Errorf("after approval: age %v, approved %v", got[age], got[`eventlite_effects{kind="irreversible",state="APPROVED"}`])
	}
}

// A collector without a relay leaves the relay's metrics out; a store
// that is closed fails the scrape rather than reporting zeros.
func TestMetricsCollectorStoreOnly(t *testing.T) {
	t.Parallel()
	s := storetest.MustOpen(t, nil)
	c, err := metrics.NewCollector(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "eventlite_relay_published_total"); n != 0 {
		t.Errorf("relay metrics without a relay: %d", n)
	}
	if n := testutil.CollectAndCount(c, "eventlite_log_head_position"); n != 1 {
		t.Errorf("head samples: %d", n)
	}
	s2, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "events.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	reg := prometheus.NewRegistry()
	mustRegister(t, reg, s2, nil)
	if _, err := reg.Gather(); err == nil {
		t.Errorf("a scrape of a closed store succeeded")
	}
}

// NewCollector refuses bad options; one collector per registry (a
// second is prometheus.AlreadyRegisteredError).
func TestNewCollectorChecked(t *testing.T) {
	t.Parallel()
	s := storetest.MustOpen(t, nil)
	reg := prometheus.NewRegistry()
	mustRegister(t, reg, s, &metrics.Options{Timeout: time.Second})
	c, err := metrics.NewCollector(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(c); !errors.As(err, &are) {
		t.Errorf("second collector: %v, want prometheus.AlreadyRegisteredError", err)
	}
	if _, err := metrics.NewCollector(s, &metrics.Options{Timeout: -time.Second}); err == nil {
		t.Errorf("a negative timeout was accepted")
	}
	if _, err := metrics.NewCollector(nil, nil); err == nil {
		t.Errorf("a nil store was accepted")
	}
	if _, err := metrics.NewRegistry(nil, nil); err == nil {
		t.Errorf("NewRegistry accepted a nil store")
	}
}

// NewRegistry holds eventlite's collector beside the Go runtime's and the
// process's, and the relay's counters when Options.Relay is set.
func TestNewRegistry(t *testing.T) {
	t.Parallel()
	s := storetest.MustOpen(t, nil)
	gathered := func(opts *metrics.Options) map[string]bool {
		reg, err := metrics.NewRegistry(s, opts)
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, mf := range mfs {
			got[mf.GetName()] = true
		}
		return got
	}
	got := gathered(nil)
	for _, name := range []string{"eventlite_log_head_position", "go_goroutines", "process_start_time_seconds"} {
		if !got[name] {
			t.Errorf("no %s among the gathered metrics", name)
		}
	}
	if got["eventlite_relay_published_total"] {
		t.Errorf("relay metrics without a relay")
	}
	rl, err := publish.New(publish.Options{Store: s, Publisher: publish.NewStdout(io.Discard), Once: true})
	if err != nil {
		t.Fatal(err)
	}
	if !gathered(&metrics.Options{Relay: rl})["eventlite_relay_published_total"] {
		t.Errorf("no relay metrics with Options.Relay")
	}
}

// mustRegister registers a collector of s's figures on reg.
func mustRegister(tb testing.TB, reg prometheus.Registerer, s *store.Store, opts *metrics.Options) {
	tb.Helper()
	c, err := metrics.NewCollector(s, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := reg.Register(c); err != nil {
		tb.Fatal(err)
	}
}

// downPublisher is a destination that is down.
type downPublisher struct{ publish.Publisher }

func (downPublisher) Publish(_ context.Context, msgs []publish.Message) []publish.Result {
	res := make([]publish.Result, len(msgs))
	for i := range res {
		res[i].Err = &publish.Error{Class: publish.Unreachable, Err: errors.New("dial: injected")}
	}
	return res
}

func (downPublisher) Ping(context.Context) error {
	return &publish.Error{Class: publish.Unreachable, Err: errors.New("ping: injected")}
}

// While the relay's destination is down, the scrape says since when.
func TestMetricsRelayUnreachable(t *testing.T) {
	t.Parallel()
	s := storetest.MustOpen(t, nil)
	appendTo(t, s, "a", 1)
	down := make(chan struct{}, 2)
	rl, err := publish.New(publish.Options{Store: s, Publisher: downPublisher{publish.NewStdout(io.Discard)},
		BackoffBase: time.Millisecond, BackoffMax: 10 * time.Millisecond,
		OnBatch: func(b publish.BatchReport) {
			if b.Down != nil {
				select {
				case down <- struct{}{}:
				default:
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rl.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// A round is reported before the relay backs off: once the second
	// round is reported, the first backed off.
	for range 2 {
		select {
		case <-down:
		case <-time.After(10 * time.Second):
			t.Fatal("no round found the destination down")
		}
	}
	since := rl.Stats().UnreachableSince
	c, err := metrics.NewCollector(s, &metrics.Options{Relay: rl})
	if err != nil {
		t.Fatal(err)
	}
	got := testutil.ToFloat64(filterCollector{c, "eventlite_relay_unreachable_since_seconds"})
	if want := float64(since.UnixNano()) / 1e9; since.IsZero() || got != want {
		t.Errorf("unreachable since %v, want %v (%v)", got, want, since)
	}
}

// filterCollector passes on one metric of a collector.
type filterCollector struct {
	prometheus.Collector
	name string
}

func (f filterCollector) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() {
		f.Collector.Collect(all)
		close(all)
	}()
	for m := range all {
		if strings.Contains(m.Desc().String(), `"`+f.name+`"`) {
			ch <- m
		}
	}
}
