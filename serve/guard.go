package serve

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/eventlite/eventlite/internal/hostguard"
)

// The guards every request passes before its route: the Host rule, the
// body rules (rate, memory) and the write deadline; and the limiter of
// failed authentications. Each is tested from outside in guard_test.go.

// Defaults of the guards' options.
const (
	DefaultMinBodyRate          = 1024
	DefaultBodyGrace            = 10 * time.Second
	DefaultMaxBufferedBodyBytes = 64 << 20
	DefaultIdleTimeout          = 2 * time.Minute
	DefaultShutdownGrace        = 30 * time.Second
	DefaultAuthFailureBurst     = 20
	DefaultAuthFailureInterval  = time.Second
)

// reqInfo is what the guards learn of one request, for the access log
// and for releasing its body's memory.
type reqInfo struct {
	token    int   // index into Handler.tokens; -1: none
	buffered int64 // bytes of the body budget held
}

type reqInfoKey struct{}

func infoOf(r *http.Request) *reqInfo {
	i, _ := r.Context().Value(reqInfoKey{}).(*reqInfo)
	return i
}

// ServeHTTP answers one request: the Host rule first, then the route.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !h.hosts.Allowed(r.Host) {
		rec := &recorder{ResponseWriter: w}
		writeProblem(rec, newProblem(hostguard.Problem, hostguard.Detail(r.Host)))
		h.logAccess(r, rec, &reqInfo{token: -1}, start)
		return
	}
	info := &reqInfo{token: -1}
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, info))
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(start.Add(h.opts.WriteTimeout)) // 100 Continue, if asked
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		_ = rc.SetReadDeadline(start.Add(h.opts.BodyGrace))
		r.Body = &rateBody{ReadCloser: r.Body, rc: rc, start: start, grace: h.opts.BodyGrace, rate: h.opts.MinBodyRate}
	}
	rec := &recorder{ResponseWriter: w, rc: rc, timeout: h.opts.WriteTimeout}
	defer func() {
		// The response's last bytes are written after the route returns
		// (a long-poll's may come long after the start).
		_ = rc.SetWriteDeadline(time.Now().Add(h.opts.WriteTimeout))
		h.bodies.release(info.buffered)
		h.logAccess(r, rec, info, start)
	}()
	h.route(rec, r)
}

// recorder sets a write deadline before each write of the response (a
// client that stops reading is dropped after WriteTimeout), and counts the
// status and bytes for the access log. ResponseController reaches the
// connection through Unwrap.
type recorder struct {
	http.ResponseWriter
	rc      *http.ResponseController // nil: no deadline
	timeout time.Duration
	status  int
	bytes   int64
}

func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 && code >= 200 {
		rw.status = code
	}
	if rw.rc != nil {
		_ = rw.rc.SetWriteDeadline(time.Now().Add(rw.timeout))
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(p []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	if rw.rc != nil {
		_ = rw.rc.SetWriteDeadline(time.Now().Add(rw.timeout))
	}
	n, err := rw.ResponseWriter.Write(p)
	rw.bytes += int64(n)
	return n, err
}

func (rw *recorder) Flush() {
	if rw.rc != nil {
		_ = rw.rc.SetWriteDeadline(time.Now().Add(rw.timeout))
		_ = rw.rc.Flush()
	} else if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// rateBody enforces the body rules while a body is read: after grace, at
// least rate bytes per second on average, and never a pause longer than
// grace. Each read that brings bytes moves the connection's read deadline
// to the earlier of the two; a read past it fails with a timeout.
type rateBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	grace    time.Duration
	rate     int
	total    int64
	timedOut bool
}

func (b *rateBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.total += int64(n)
		now := time.Now()
		avg := b.start.Add(b.grace + time.Duration(float64(b.total)/float64(b.rate)*float64(time.Second)))
		pause := now.Add(b.grace)
		if pause.Before(avg) {
			avg = pause
		}
		_ = b.rc.SetReadDeadline(avg)
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.timedOut = true
	}
	return n, err
}

// bufferBody reads the request's body whole, within limit bytes and the
// server's budget of buffered bodies, and replaces r.Body with the bytes
// read; the budget is released when the request ends. A body past limit
// by its Content-Length is 413; one the budget cannot hold is 503 busy
// with Retry-After; one that arrives too slowly is 408. A body without
// Content-Length is read up to limit+1 bytes, for the route to refuse.
// It returns false when it answered.
func (h *Handler) bufferBody(w http.ResponseWriter, r *http.Request, limit int64) bool {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return true
	}
	info := infoOf(r)
	if r.ContentLength > limit {
		p := problemf("too-large", "the body is %d bytes, over the limit of %d", r.ContentLength, limit)
		p.Field, p.Limit = "body", ptr(limit)
		writeProblem(w, p)
		return false
	}
	want := r.ContentLength // exact when known
	step := want
	if want < 0 {
		want, step = limit+1, min(limit+1, 64<<10)
	}
	var buf []byte
	for {
		if !h.bodies.acquire(step) {
			writeProblem(w, problemf("busy", "the server holds request bodies up to its limit of %d bytes: retry", h.bodies.max).with("Retry-After", "1"))
			return false
		}
		info.buffered += step
		nb := make([]byte, len(buf), int64(cap(buf))+step)
		copy(nb, buf)
		buf = nb
		n, err := io.ReadFull(r.Body, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == nil && int64(len(buf)) < want:
			step = min(int64(cap(buf)), want-int64(len(buf)))
			continue
		case err == nil, errors.Is(err, io.ErrUnexpectedEOF) && r.ContentLength < 0, errors.Is(err, io.EOF) && r.ContentLength < 0:
		case errors.Is(err, os.ErrDeadlineExceeded):
			writeProblem(w, problemf("request-timeout", "the body arrived slower than %d bytes per second after %s, or paused longer: send it at once", h.opts.MinBodyRate, h.opts.BodyGrace))
			return false
		default:
			writeProblem(w, invalidBody("", "", "reading the body: %v", err))
			return false
		}
		break
	}
	if rb, ok := r.Body.(*rateBody); ok {
		_ = rb.rc.SetReadDeadline(time.Time{}) // read whole: the route may take its time
	}
	r.Body = io.NopCloser(&byteReader{b: buf})
	return true
}

type byteReader struct{ b []byte }

func (br *byteReader) Read(p []byte) (int, error) {
	if len(br.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, br.b)
	br.b = br.b[n:]
	return n, nil
}

// budget bounds the bytes of request bodies held at once.
type budget struct {
	mu   sync.Mutex
	used int64
	max  int64
}

func (b *budget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// maxLimiterClients bounds the addresses the limiter remembers: beyond
// it, those whose bucket is full again are forgotten, then the oldest.
const maxLimiterClients = 10000

// limiter counts failed authentications per client address in token
// buckets of burst, refilled one per every.
type limiter struct {
	mu    sync.Mutex
	burst int
	every time.Duration
	m     map[netip.Prefix]*bucket
	now   func() time.Time // the clock; nil is time.Now (tests set it)
}

type bucket struct {
	tokens float64
	at     time.Time
}

// clientKey is the request's client address: the IP, or for IPv6 its /64
// (one host holds a whole /64).
func clientKey(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// fail records a failed authentication from r's client and returns how
// long it must wait when it has failed too often (0: it may fail again).
func (l *limiter) fail(r *http.Request) time.Duration {
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	k := clientKey(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[netip.Prefix]*bucket)
	}
	b := l.m[k]
	if b == nil {
		if len(l.m) >= maxLimiterClients {
			l.evict(now)
		}
		b = &bucket{tokens: float64(l.burst), at: now}
		l.m[k] = b
	}
	b.tokens = math.Min(float64(l.burst), b.tokens+float64(now.Sub(b.at))/float64(l.every))
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.every))
}

func (l *limiter) evict(now time.Time) {
	var oldest netip.Prefix
	var at time.Time
	for k, b := range l.m {
		if b.tokens+float64(now.Sub(b.at))/float64(l.every) >= float64(l.burst) {
			delete(l.m, k)
		} else if at.IsZero() || b.at.Before(at) {
			oldest, at = k, b.at
		}
	}
	if len(l.m) >= maxLimiterClients {
		delete(l.m, oldest)
	}
}

// unauthorized is the answer to a failed authentication: 401, or 429 with
// Retry-After once the client has failed too often.
func (h *Handler) unauthorized(r *http.Request, detail string) *Problem {
	if wait := h.limiter.fail(r); wait > 0 {
		secs := int64(math.Ceil(wait.Seconds()))
		return problemf("too-many-failures", "this address failed to authenticate too often: retry in %d s with a valid token (a valid token is never refused)", secs).
			with("Retry-After", strconv.FormatInt(secs, 10))
	}
	return newProblem("unauthorized", detail).with("WWW-Authenticate", `Bearer realm="eventlite"`)
}
