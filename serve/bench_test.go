package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// BenchmarkHTTPAppend compares appends over HTTP (structured mode, one
// event per request, keep-alive clients) with the same appends made in
// process by as many goroutines, alternately in the same run, each side on
// its own store file. x_inproc is the HTTP rate over the in-process rate.
func BenchmarkHTTPAppend(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			inproc := storetest.MustOpenPath(b, filepath.Join(dir, "inproc.db"), nil)
			served := storetest.MustOpenPath(b, filepath.Join(dir, "http.db"), nil)
			ts := serverOn(b, served, nil)
			client := &http.Client{Transport: &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
			ctx := context.Background()
			data := []byte(`{"order":"o-1","total":42,"currency":"EUR"}`)
			streamOf := func(w int) string { return fmt.Sprintf("client-%02d", w) }

			fan := func(k int, one func(w, i int) error) []time.Duration {
				lats := make([][]time.Duration, n)
				var wg sync.WaitGroup
				for w := range n {
					wg.Go(func() {
						for i := w; i < k; i += n {
							t0 := time.Now()
							if err := one(w, i); err != nil {
								b.Error(err)
								return
							}
							lats[w] = append(lats[w], time.Since(t0))
						}
					})
				}
				wg.Wait()
				return slices.Concat(lats...)
			}
			inprocOne := func(w, _ int) error {
				e := envelope.Event{ID: ulid.Make().String(), Source: "/bench", Type: "order.placed", DataContentType: "application/json", Data: data}
				_, err := inproc.Append(ctx, "default", streamOf(w), store.Any, e)
				return err
			}
			httpOne := func(w, _ int) error {
				body := `{"specversion":"1.0","id":"` + ulid.Make().String() + `","source":"/bench","type":"order.placed","datacontenttype":"application/json","data":` + string(data) + `}`
				req, _ := http.NewRequest("POST", ts.url+streamEvents("default", streamOf(w)), strings.NewReader(body))
				req.Header.Set("Content-Type", ctStructured)
				res, err := client.Do(req)
				if err != nil {
					return err
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusCreated {
					return fmt.Errorf("status %d", res.StatusCode)
				}
				return nil
			}
			// Warm up both sides (connections, statements).
			fan(n, inprocOne)
			fan(n, httpOne)
			b.ResetTimer()
			var tIn, tHTTP time.Duration
			var latHTTP []time.Duration
			for done := 0; done < b.N; {
				k := min(25*n, b.N-done)
				t0 := time.Now()
				fan(k, inprocOne)
				tIn += time.Since(t0)
				t0 = time.Now()
				latHTTP = append(latHTTP, fan(k, httpOne)...)
				tHTTP += time.Since(t0)
				done += k
			}
			b.StopTimer()
			rIn, rHTTP := float64(b.N)/tIn.Seconds(), float64(b.N)/tHTTP.Seconds()
			slices.Sort(latHTTP)
			b.ReportMetric(rHTTP, "http_appends/s")
			b.ReportMetric(rIn, "inproc_appends/s")
			b.ReportMetric(rHTTP/rIn, "x_inproc")
			b.ReportMetric(float64(latHTTP[len(latHTTP)*99/100].Microseconds())/1000, "http_p99_ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkSSEFanOut measures the delay from an append's commit (its
// return) to its delivery to each of 100 live SSE readers of the log,
// with one appender at 1,000 appends a second; b.N is the number of
// appends (run with -benchtime=3000x).
func BenchmarkSSEFanOut(b *testing.B) {
	const subscribers = 100
	s := storetest.MustOpen(b, nil)
	ts := serverOn(b, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Positions are 1..b.N: each side writes its own times, without locks.
	committed := make([]atomic.Int64, b.N+1)
	received := make([][]int64, subscribers)
	var ready, finished sync.WaitGroup
	var reconnects atomic.Int64
	transport := &http.Transport{MaxIdleConnsPerHost: subscribers}
	for sub := range subscribers {
		ready.Add(1)
		finished.Add(1)
		received[sub] = make([]int64, b.N+1)
		go func() {
			defer finished.Done()
			signalled := false
			lastID := ""
			// A dropped reader reconnects with Last-Event-ID, as a client
			// does; its delays include the reconnect.
			for lastPos := int64(0); lastPos < int64(b.N); {
				req, _ := http.NewRequestWithContext(ctx, "GET", ts.url+"/v1/tenants/default/events", nil)
				req.Header.Set("Accept", "text/event-stream")
				if lastID != "" {
					req.Header.Set("Last-Event-ID", lastID)
					reconnects.Add(1)
				}
				res, err := (&http.Client{Transport: transport}).Do(req)
				if err != nil {
					b.Error(err)
					if !signalled {
						ready.Done()
					}
					return
				}
				r := bufio.NewReaderSize(res.Body, 64<<10)
				for {
					line, err := r.ReadSlice('\n')
					if err != nil {
						break
					}
					if !signalled && bytes.HasPrefix(line, []byte("event: caught-up")) {
						signalled = true
						ready.Done()
					}
					if !bytes.HasPrefix(line, []byte("id: ")) {
						continue
					}
					now := time.Now().UnixNano()
					lastID = string(bytes.TrimSpace(line[4:]))
					pos, _ := strconv.ParseInt(lastID, 10, 64)
					if pos > 0 && pos <= int64(b.N) {
						received[sub][pos] = now
					}
					if lastPos = pos; pos >= int64(b.N) {
						break
					}
				}
				res.Body.Close()
			}
		}()
	}
	ready.Wait()
	b.ResetTimer()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := 0; i < b.N; i++ {
		<-tick.C
		e := envelope.Event{Source: "/bench", Type: "order.placed", DataContentType: "application/json", Data: []byte(`{"n":1}`)}
		res, err := s.Append(ctx, "default", "s", store.Any, e)
		if err != nil {
			b.Fatal(err)
		}
		committed[res.FirstPosition()].Store(time.Now().UnixNano())
	}
	finished.Wait()
	b.StopTimer()
	var delays []time.Duration
	for _, rs := range received {
		for pos := 1; pos <= b.N; pos++ {
			if rs[pos] == 0 {
				continue
			}
			// A delivery may beat Append's return to its caller: 0.
			delays = append(delays, time.Duration(max(rs[pos]-committed[pos].Load(), 0)))
		}
	}
	if len(delays) != subscribers*b.N {
		b.Fatalf("%d deliveries, want %d", len(delays), subscribers*b.N)
	}
	slices.Sort(delays)
	pct := func(p int) float64 { return float64(delays[(len(delays)-1)*p/100].Microseconds()) / 1000 }
	b.ReportMetric(pct(50), "p50_ms")
	b.ReportMetric(pct(99), "p99_ms")
	b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "max_ms")
	b.ReportMetric(float64(reconnects.Load()), "reconnects")
	b.ReportMetric(0, "ns/op")
}
