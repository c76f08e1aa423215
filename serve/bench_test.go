package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
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
// event per request, keep-alive connections) with the same appends made in
// process by as many goroutines, alternately in the same run, each side on
// its own store file. x_inproc is the HTTP rate over the in-process rate.
//
// Each client is a minimal HTTP/1.1 keep-alive client on its own TCP
// connection to 127.0.0.1, as load generators such as wrk are: it writes
// each request whole and reads the status line, the headers and the
// Content-Length body. It takes less of the shared CPU than net/http's
// client, whose figures BenchmarkHTTPAppendNetHTTP gives.
func BenchmarkHTTPAppend(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			benchHTTPAppend(b, n, newWireClient)
		})
	}
}

// BenchmarkHTTPAppendNetHTTP is BenchmarkHTTPAppend with net/http's client
// (one Transport, n connections).
func BenchmarkHTTPAppendNetHTTP(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			benchHTTPAppend(b, n, newNetHTTPClient(n))
		})
	}
}

// poster posts one structured CloudEvent body to a path and returns the
// status.
type poster interface {
	post(path string, body []byte) (int, error)
	close()
}

// benchHTTPAppend runs BenchmarkHTTPAppend with n clients made by dial,
// and checks that every event of both sides was stored.
func benchHTTPAppend(b *testing.B, n int, dial func(b *testing.B, url string) poster) {
	dir := b.TempDir()
	inproc := storetest.MustOpenPath(b, filepath.Join(dir, "inproc.db"), nil)
	served := storetest.MustOpenPath(b, filepath.Join(dir, "http.db"), nil)
	ts := serverOn(b, served, nil)
	ctx := context.Background()
	data := []byte(`{"order":"o-1","total":42,"currency":"EUR"}`)
	streamOf := func(w int) string { return fmt.Sprintf("client-%02d", w) }
	clients := make([]poster, n)
	paths := make([]string, n)
	for w := range n {
		clients[w] = dial(b, ts.url)
		defer clients[w].close()
		paths[w] = streamEvents("default", streamOf(w))
	}
	sentIn, sentHTTP := make([]int64, n), make([]int64, n)

	fan := func(k int, one func(w int) error) []time.Duration {
		lats := make([][]time.Duration, n)
		var wg sync.WaitGroup
		for w := range n {
			wg.Go(func() {
				for i := w; i < k; i += n {
					t0 := time.Now()
					if err := one(w); err != nil {
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
	inprocOne := func(w int) error {
		e := envelope.Event{ID: ulid.Make().String(), Source: "/bench", Type: "order.placed", DataContentType: "application/json", Data: data}
		_, err := inproc.Append(ctx, "default", streamOf(w), store.Any, e)
		sentIn[w]++
		return err
	}
	bodies := make([][]byte, n)
	httpOne := func(w int) error {
		body := append(bodies[w][:0], `{"specversion":"1.0","id":"`...)
		body = append(body, ulid.Make().String()...)
		body = append(body, `","source":"/bench","type":"order.placed","datacontenttype":"application/json","data":`...)
		body = append(append(body, data...), '}')
		bodies[w] = body
		status, err := clients[w].post(paths[w], body)
		if err != nil {
			return err
		}
		if status != http.StatusCreated {
			return fmt.Errorf("status %d", status)
		}
		sentHTTP[w]++
		return nil
	}
	// Warm up both sides (connections, statements).
	fan(n, inprocOne)
	fan(n, httpOne)
	b.ResetTimer()
	var tIn, tHTTP, cpuIn, cpuHTTP time.Duration
	var latHTTP []time.Duration
	for done := 0; done < b.N; {
		k := min(25*n, b.N-done)
		t0, c0 := time.Now(), cpuNow(b)
		fan(k, inprocOne)
		tIn += time.Since(t0)
		cpuIn += cpuNow(b) - c0
		t0, c0 = time.Now(), cpuNow(b)
		latHTTP = append(latHTTP, fan(k, httpOne)...)
		tHTTP += time.Since(t0)
		cpuHTTP += cpuNow(b) - c0
		done += k
	}
	b.StopTimer()
	for w := range n {
		for _, side := range []struct {
			s    *store.Store
			sent int64
		}{{inproc, sentIn[w]}, {served, sentHTTP[w]}} {
			v, err := side.s.StreamVersion(ctx, "default", streamOf(w))
			if err != nil || v != side.sent {
				b.Fatalf("stream %s at version %d (%v), want %d appended", streamOf(w), v, err, side.sent)
			}
		}
	}
	rIn, rHTTP := float64(b.N)/tIn.Seconds(), float64(b.N)/tHTTP.Seconds()
	slices.Sort(latHTTP)
	b.ReportMetric(rHTTP, "http_appends/s")
	b.ReportMetric(rIn, "inproc_appends/s")
	b.ReportMetric(rHTTP/rIn, "x_inproc")
	b.ReportMetric(float64(latHTTP[len(latHTTP)*99/100].Microseconds())/1000, "http_p99_ms")
	// CPU time per append, clients included: less sensitive to other
	// processes on the machine than the rates.
	if _, ok := processCPU(b); ok {
		b.ReportMetric(float64(cpuHTTP.Microseconds())/float64(b.N), "http_cpu_us/op")
		b.ReportMetric(float64(cpuIn.Microseconds())/float64(b.N), "inproc_cpu_us/op")
	}
	b.ReportMetric(0, "ns/op")
}

// cpuNow is processCPU's time, 0 where it is not known.
func cpuNow(b *testing.B) time.Duration {
	d, _ := processCPU(b)
	return d
}

// netHTTPClient posts with net/http's client.
type netHTTPClient struct {
	c   *http.Client
	url string
}

func newNetHTTPClient(n int) func(b *testing.B, url string) poster {
	c := &http.Client{Transport: &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	return func(_ *testing.B, url string) poster { return &netHTTPClient{c: c, url: url} }
}

func (c *netHTTPClient) post(path string, body []byte) (int, error) {
	req, _ := http.NewRequest("POST", c.url+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ctStructured)
	res, err := c.c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

func (c *netHTTPClient) close() { c.c.CloseIdleConnections() }

// wireClient is an HTTP/1.1 client on one keep-alive connection: it
// writes a request whole and reads only the status line, the headers
// (for Content-Length; a response without one is an error) and the body.
type wireClient struct {
	conn net.Conn
	r    *bufio.Reader
	host string
	req  []byte
}

func newWireClient(b *testing.B, url string) poster {
	host := strings.TrimPrefix(url, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		b.Fatal(err)
	}
	return &wireClient{conn: conn, r: bufio.NewReaderSize(conn, 4096), host: host}
}

func (c *wireClient) post(path string, body []byte) (int, error) {
	req := append(c.req[:0], "POST "...)
	req = append(req, path...)
	req = append(req, " HTTP/1.1\r\nHost: "...)
	req = append(req, c.host...)
	req = append(req, "\r\nContent-Type: "+ctStructured+"\r\nContent-Length: "...)
	req = strconv.AppendInt(req, int64(len(body)), 10)
	req = append(req, "\r\n\r\n"...)
	req = append(req, body...)
	c.req = req
	if _, err := c.conn.Write(req); err != nil {
		return 0, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	// "HTTP/1.1 201 Created\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			break
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(name, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		}
	}
	if length < 0 {
		return 0, fmt.Errorf("status %d without Content-Length", status)
	}
	if _, err := c.r.Discard(length); err != nil {
		return 0, err
	}
	return status, nil
}

func (c *wireClient) close() { _ = c.conn.Close() }

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
