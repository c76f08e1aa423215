package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
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
	l, err := s.Leases().Acquire(ctx, "relay", "earlier-relay", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.DeadLetter(ctx, l, []store.Failure{{Position: poison.FirstPosition(), Error: "message too large"}})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Leases().Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	// A projection at position 2 with no runner; a consumer's quarantined
	// event, deferral and conflict; an effect reserved and one unknown.
	if err := s.Update(ctx, func(tx *store.Tx) error {
		if err := tx.SetProjectionStatus(ctx, "orders", store.ProjectionActive, ""); err != nil {
			return err
		}
		if err := tx.SetCheckpoint(ctx, "orders", 2, nil); err != nil {
			return err
		}
		if err := tx.Quarantine(ctx, store.Quarantined{Consumer: "c", Reason: store.ReasonUninterpretable, EventID: "q1"}); err != nil {
			return err
		}
		if _, _, err := tx.Defer(ctx, store.DeferredEvent{Consumer: "c", Tenant: "default", Subject: "o-1", Version: 3, EventID: "e3",
			Event: []byte(`{}`), Expected: 2, FirstSeen: time.Now(), Reason: "gap"}); err != nil {
			return err
		}
		return tx.RecordConflict(ctx, store.VersionConflict{Consumer: "c", Tenant: "default", Subject: "o-1", Version: 2,
			KeptEventID: "a", ConflictingID: "b", ConflictingEvent: []byte(`{}`)})
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Effects().Reserve(ctx, "default", "email:1"); err != nil {
		t.Fatal(err)
	}
	_, _ = s.Effects().Run(ctx, "default", "charge:1", func(context.Context) (string, error) { return "", store.ErrOutcomeUnknown })

	// A drain publishes a's 3 events and stops at the dead letter.
	rl, err := publish.New(publish.Options{Store: s, Publisher: publish.NewStdout(io.Discard), Once: true})
	if err != nil {
		t.Fatal(err)
	}
	var inc *publish.IncompleteError
	if err := rl.Run(ctx); !errors.As(err, &inc) {
		t.Fatalf("drain: %v, want rows left behind the dead letter", err)
	}

	c := newCollector(s, rl.Stats)
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	ms, err := serveMetrics("127.0.0.1:0", reg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	got := scrape(t, "http://"+ms.Addr().String()+"/metrics")

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
		"eventlite_projection_checkpoint{projection=\"orders\"}":                2,
		"eventlite_projection_lag_events{projection=\"orders\"}":                3,
		"eventlite_projection_status{projection=\"orders\",status=\"idle\"}":    1,
		"eventlite_projection_status{projection=\"orders\",status=\"running\"}": 0,
		"eventlite_quarantined_events":                                          1,
		"eventlite_deferred_events":                                             1,
		"eventlite_version_conflicts":                                           1,
		"eventlite_effects{state=\"RESERVED\"}":                                 1,
		"eventlite_effects{state=\"UNKNOWN\"}":                                  1,
		"eventlite_effects{state=\"COMPLETED\"}":                                0,
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

// A collector without a relay leaves the relay's metrics out; a store
// that is closed fails the scrape rather than reporting zeros.
func TestMetricsCollectorStoreOnly(t *testing.T) {
	t.Parallel()
	s := storetest.MustOpen(t, nil)
	c := newCollector(s, nil)
	if n := testutil.CollectAndCount(c, "eventlite_relay_published_total"); n != 0 {
		t.Errorf("relay metrics without a relay: %d", n)
	}
	if n := testutil.CollectAndCount(c, "eventlite_log_head_position"); n != 1 {
		t.Errorf("head samples: %d", n)
	}
	s2, err := store.Open(t.Context(), newDB(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(s2, nil))
	if _, err := reg.Gather(); err == nil {
		t.Errorf("a scrape of a closed store succeeded")
	}
}

// serveMetrics returns the address it bound; an address in use is an
// error; after Close nothing listens.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	ms, err := serveMetrics("127.0.0.1:0", reg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	addr := ms.Addr().(*net.TCPAddr)
	if addr.Port == 0 || !addr.IP.IsLoopback() {
		t.Fatalf("bound %v", addr)
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /metrics: %s", resp.Status)
	}
	if _, err := serveMetrics(addr.String(), reg, hclog.NewNullLogger()); err == nil || !strings.Contains(err.Error(), "--metrics") {
		t.Errorf("second listen on %s: %v", addr, err)
	}
	if err := ms.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", addr.String()); err == nil {
		t.Errorf("still listening on %s after Close", addr)
	}
}

func TestRelayMetricsFlag(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, v := range []string{"9464", "localhost", "127.0.0.1:99999", "127.0.0.1:http", ":"} {
		r := run(t, "", "relay", "--to", "stdout", "--metrics", v, "--db", db)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--metrics") || !strings.Contains(r.stderr, "Usage: eventlite relay") {
			t.Errorf("--metrics %q: exit %d, stderr:\n%s", v, r.code, r.stderr)
		}
	}
	appendN(t, db, "s", 2)
	// An address in use: exit 1 before anything is relayed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := run(t, "", "relay", "--to", "stdout", "--once", "--metrics", ln.Addr().String(), "--db", db)
	if r.code != exitInternal || !strings.Contains(r.stderr, "--metrics") || r.stdout != "" {
		t.Errorf("address in use: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// A free port: served while the drain runs, and shut down after it.
	r = mustRun(t, "", "relay", "--to", "stdout", "--once", "--metrics", "127.0.0.1:0", "--db", db)
	if len(lines(r.stdout)) != 2 || !strings.Contains(r.stderr, "serving metrics") {
		t.Errorf("stdout %q, stderr:\n%s", r.stdout, r.stderr)
	}
}
