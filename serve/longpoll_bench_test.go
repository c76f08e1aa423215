package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// BenchmarkLongPolls measures what 40 waiting long polls with a filter
// no index serves (?correlationid=nomatch&wait=30) cost the rest of the
// server, on a 200,000-event log (20,000 under -short): HTTP appends and
// /healthz on a server with the polls waiting, against the same on a
// server over an identical log without them, alternately in the same run
// (chunks of 200 appends). b.N is the number of appends per side.
//
// The polls wait on the tenant the appends go to, so every append wakes
// them all. x_quiet is the append rate with the polls over the rate
// without; healthz_p99_ms and quiet_healthz_p99_ms the 99th percentile of
// a /healthz round trip during each side's appends; repolls counts the
// polls' reads of the log after the first 40 (a poll whose wait ran out
// asks again, and reads on from where the polls found nothing).
func BenchmarkLongPolls(b *testing.B) {
	const (
		polls     = 40
		appenders = 4
		chunk     = 200
	)
	size := 200_000
	if testing.Short() {
		size = 20_000
	}
	dir := b.TempDir()
	quiet := longPollSide(b, filepath.Join(dir, "quiet.db"), size)
	polled := longPollSide(b, filepath.Join(dir, "polled.db"), size)

	// The polls, on the polled side only; started reads their log once.
	var started atomic.Int64
	allStarted := make(chan struct{})
	inner := polled.h.hub.read
	polled.h.hub.read = func(ctx context.Context, o store.ReadAllOptions) iter.Seq2[envelope.Event, error] {
		return func(yield func(envelope.Event, error) bool) {
			defer func() {
				if o.CorrelationID == "nomatch" && started.Add(1) == polls {
					close(allStarted)
				}
			}()
			for e, err := range inner(ctx, o) {
				if !yield(e, err) {
					return
				}
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var pollers sync.WaitGroup
	defer func() { cancel(); pollers.Wait() }()
	pollClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: polls}}
	for range polls {
		pollers.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", polled.url+"/v1/tenants/default/events?correlationid=nomatch&wait=30", nil)
				res, err := pollClient.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						b.Error(err)
					}
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Errorf("long poll: status %d", res.StatusCode)
					return
				}
			}
		})
	}
	<-allStarted

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: appenders + 1}}
	// run makes k appends to side over HTTP from the appenders while one
	// client asks /healthz in a loop; it returns the time the appends took
	// and the /healthz round trips.
	run := func(side *longPollServer, k int) (time.Duration, []time.Duration) {
		stop := make(chan struct{})
		var lats []time.Duration
		var prober sync.WaitGroup
		prober.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				res, err := client.Get(side.url + "/healthz")
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lats = append(lats, time.Since(t0))
			}
		})
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range appenders {
			wg.Go(func() {
				path := side.url + fmt.Sprintf("/v1/tenants/default/streams/client-%d/events", w)
				for i := w; i < k; i += appenders {
					body := fmt.Appendf(nil, `{"specversion":"1.0","id":"%s","source":"/bench","type":"order.placed","correlationid":"c-1","data":{"n":%d}}`, ulid.Make(), i)
					res, err := client.Post(path, "application/cloudevents+json", bytes.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusCreated {
						b.Errorf("append: status %d", res.StatusCode)
						return
					}
				}
			})
		}
		wg.Wait()
		took := time.Since(t0)
		close(stop)
		prober.Wait()
		return took, lats
	}
	run(quiet, appenders) // warm up connections and statements
	run(polled, appenders)

	b.ResetTimer()
	var tQuiet, tPolled time.Duration
	var hzQuiet, hzPolled []time.Duration
	for done := 0; done < b.N; {
		k := min(chunk, b.N-done)
		d, l := run(quiet, k)
		tQuiet, hzQuiet = tQuiet+d, append(hzQuiet, l...)
		d, l = run(polled, k)
		tPolled, hzPolled = tPolled+d, append(hzPolled, l...)
		done += k
	}
	b.StopTimer()
	if polled.h.hub.error() != nil {
		b.Fatalf("the hub stopped: %v", polled.h.hub.error())
	}
	p99 := func(ls []time.Duration) float64 {
		if len(ls) == 0 {
			return 0
		}
		slices.Sort(ls)
		return float64(ls[(len(ls)-1)*99/100].Microseconds()) / 1000
	}
	rQuiet, rPolled := float64(b.N)/tQuiet.Seconds(), float64(b.N)/tPolled.Seconds()
	b.ReportMetric(rPolled, "appends/s")
	b.ReportMetric(rQuiet, "quiet_appends/s")
	b.ReportMetric(rPolled/rQuiet, "x_quiet")
	b.ReportMetric(p99(hzPolled), "healthz_p99_ms")
	b.ReportMetric(p99(hzQuiet), "quiet_healthz_p99_ms")
	b.ReportMetric(float64(started.Load()-polls), "repolls")
	b.ReportMetric(0, "ns/op")
}

// longPollServer is one side of BenchmarkLongPolls: a store and its
// server on 127.0.0.1.
type longPollServer struct {
	h   *Handler
	url string
}

// longPollSide opens a store at path holding size events of tenant
// default (100 streams, correlation ids c-0 to c-96, none "nomatch") and
// serves it.
func longPollSide(b *testing.B, path string, size int) *longPollServer {
	b.Helper()
	s := storetest.MustOpenPath(b, path, nil)
	ctx := context.Background()
	const per = 1000
	evs := make([]envelope.Event, per)
	for i := 0; i < size; i += per {
		for j := range evs {
			evs[j] = envelope.Event{ID: ulid.Make().String(), Source: "/fixture", Type: "order.placed",
				CorrelationID: fmt.Sprintf("c-%d", (i+j)%97), DataContentType: "application/json", Data: []byte(`{"n":1}`)}
		}
		if _, err := s.Append(ctx, "default", fmt.Sprintf("fx-%d", (i/per)%100), store.Any, evs[:min(per, size-i)]...); err != nil {
			b.Fatal(err)
		}
	}
	h, err := New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return &longPollServer{h: h, url: srv.URL}
}
