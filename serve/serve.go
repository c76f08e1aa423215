package serve

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/hostguard"
	"github.com/eventlite/eventlite/store"
)

// MaxBodyBytes is the largest request body: a batch is one transaction,
// decoded whole.
const MaxBodyBytes = 16 << 20

// DefaultHeartbeat is how often a live reader gets a heartbeat.
const DefaultHeartbeat = 15 * time.Second

// Options configures New. The zero value (or nil) means the defaults
// documented on each field.
type Options struct {
	// Tokens, when any, are required on every path but /healthz and
	// /openapi.json. Default none: every tenant is served to every
	// client, which a caller should allow on loopback only (the CLI
	// refuses anything else).
	Tokens []Token
	// CORSOrigins are the origins allowed to call from a browser. Default
	// none: CORS is off.
	CORSOrigins []string
	// Heartbeat is the default interval of live readers' heartbeats (a
	// request may ask for another with heartbeat=D). Default 15s.
	Heartbeat time.Duration
	// WriteTimeout bounds each write of a response: a client that does
	// not take its data within it is dropped (a live reader resumes on
	// reconnect). Default 10s.
	WriteTimeout time.Duration
	// MaxDataBytes and MaxEventBytes are the store's limits, shown in
	// /v1/info. Default envelope's defaults.
	MaxDataBytes, MaxEventBytes int
	// Logger receives structured logs. Tokens are never logged. Default:
	// none.
	Logger hclog.Logger
	// AllowedHosts are host names (no port) served besides localhost and
	// IP literals, which are always served, whatever the port. A request
	// whose Host is anything else is refused with 403 host-not-allowed
	// before any handler, tokens or not: a web page whose name an
	// attacker rebinds to 127.0.0.1 sends its own name. Default none.
	AllowedHosts []string
	// MinBodyRate and BodyGrace bound how slowly a request body may
	// arrive: after BodyGrace from the end of the headers, the body must
	// have arrived at MinBodyRate bytes per second on average, and it may
	// never pause longer than BodyGrace; else the request is answered 408
	// request-timeout and its connection closed. Defaults 1024 bytes/s
	// and 10s. Requests without a body (every live read) are exempt.
	MinBodyRate int
	BodyGrace   time.Duration
	// MaxBufferedBodyBytes bounds the request bodies held in memory at
	// once across all requests: a body is read whole before its handler
	// runs, and one that would pass the bound is answered 503 busy with
	// Retry-After. Default 64 MiB (four bodies of MaxBodyBytes).
	MaxBufferedBodyBytes int64
	// IdleTimeout closes a keep-alive connection that sends no new request
	// within it (used by Serve). Default 2m.
	IdleTimeout time.Duration
	// ShutdownGrace is how long Serve lets requests in flight finish once
	// its context ends; the connections still open then are closed, and
	// a warning names how many. Default 30s.
	ShutdownGrace time.Duration
	// AuthFailureBurst and AuthFailureInterval rate-limit failed
	// authentications per client address (IPv6: per /64): a client may
	// fail AuthFailureBurst times in a row and once more per
	// AuthFailureInterval; beyond that a failed request is answered 429
	// too-many-failures with Retry-After. A request with a valid token is
	// never refused. Defaults 20 and 1s.
	AuthFailureBurst    int
	AuthFailureInterval time.Duration
	// AccessLog, when set, receives one JSON line per request: time,
	// method, route (the path's pattern: no stream id, event id or
	// effect key), status, bytes, duration, tenant and the token (its
	// index in Tokens and its tenant, never its secret); no headers, no
	// bodies. Default nil: off. Writes are serialized.
	AccessLog io.Writer
	// Propagator reads a request's per-hop trace context (the
	// `traceparent` and `tracestate` headers under W3C TraceContext), on
	// which an append's span is parented; the events' stored origin is
	// that span's context, or the request's own when tracing is off.
	// Default otel's global propagator; the CLI sets W3C TraceContext.
	Propagator propagation.TextMapPropagator
}

// Handler is the HTTP API over one store. It is safe for concurrent use.
type Handler struct {
	s      *store.Store
	opts   Options
	log    hclog.Logger
	tokens []tokenEntry

	mu       sync.Mutex
	inFlight map[string]bool // tenant + "\x00" + Idempotency-Key

	closed  bool // under mu: no new live reader starts
	closing chan struct{}
	live    sync.WaitGroup
	prom    metricsHandler
	hub     *hub
	polls   emptySpans // what long polls found empty

	sessions sessions // the web page's, by cookie

	hosts   *hostguard.Check
	bodies  budget
	limiter limiter
	access  *accessLog // nil: off
}

// New returns the API over s. Close it to end its live readers.
func New(s *store.Store, opts *Options) (*Handler, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.MaxDataBytes == 0 {
		o.MaxDataBytes = envelope.DefaultMaxDataBytes
	}
	if o.MaxEventBytes == 0 {
		o.MaxEventBytes = envelope.DefaultMaxEventBytes
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.MinBodyRate <= 0 {
		o.MinBodyRate = DefaultMinBodyRate
	}
	if o.BodyGrace <= 0 {
		o.BodyGrace = DefaultBodyGrace
	}
	if o.MaxBufferedBodyBytes <= 0 {
		o.MaxBufferedBodyBytes = DefaultMaxBufferedBodyBytes
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.AuthFailureBurst <= 0 {
		o.AuthFailureBurst = DefaultAuthFailureBurst
	}
	if o.AuthFailureInterval <= 0 {
		o.AuthFailureInterval = DefaultAuthFailureInterval
	}
	hosts, err := hostguard.New(o.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("serve: AllowedHosts: %w", err)
	}
	if err := ValidateTokens(o.Tokens); err != nil {
		return nil, err
	}
	h := &Handler{
		s: s, opts: o, log: o.Logger, tokens: hashTokens(o.Tokens),
		inFlight: make(map[string]bool),
		closing:  make(chan struct{}),
		hosts:    hosts,
		bodies:   budget{max: o.MaxBufferedBodyBytes},
		limiter:  limiter{burst: o.AuthFailureBurst, every: o.AuthFailureInterval},
	}
	if o.AccessLog != nil {
		h.access = &accessLog{w: o.AccessLog}
	}
	h.hub = newHub(s, h.closing, o.Logger)
	return h, nil
}

// Close ends every live reader (each gets the end of its response) and
// waits for them. Requests that are not live are not affected: an
// http.Server's Shutdown waits for those.
func (h *Handler) Close() error {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.closing)
	}
	h.mu.Unlock()
	h.live.Wait()
	h.hub.wait()
	return nil
}

// route is a request's path, split and decoded.
type route struct {
	kind    string
	tenant  string
	stream  string
	version string
	eventID string
	effect  string // an effect's key
	name    string // a projection's or consumer's name
}

// parseRoute splits the escaped path into segments and decodes each, so
// that an encoded "/" (%2F), "." or ".." stays inside its segment.
func parseRoute(escaped string) (route, bool) {
	raw := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	seg := make([]string, len(raw))
	for i, r := range raw {
		s, err := url.PathUnescape(r)
		if err != nil {
			return route{}, false
		}
		seg[i] = s
	}
	n := len(seg)
	switch {
	case n == 1 && raw[0] == "healthz":
		return route{kind: "healthz"}, true
	case n == 1 && raw[0] == "openapi.json":
		return route{kind: "openapi"}, true
	case n == 1 && raw[0] == "metrics":
		return route{kind: "metrics"}, true
	case n == 2 && raw[0] == "v1" && (raw[1] == "info" || raw[1] == "consumers" || raw[1] == "doctor" || raw[1] == "stats" || raw[1] == "tenants"):
		return route{kind: raw[1]}, true
	case n == 2 && raw[0] == "v1" && raw[1] == "quarantine":
		return route{kind: "quarantine"}, true
	case n == 5 && raw[0] == "v1" && raw[1] == "quarantine" && (raw[4] == "retry" || raw[4] == "skip"):
		return route{kind: "quarantine-" + raw[4], name: seg[2], eventID: seg[3]}, true
	case n < 4 || raw[0] != "v1" || raw[1] != "tenants":
		return route{}, false
	}
	rt := route{tenant: seg[2]}
	switch {
	case n == 4 && raw[3] == "streams":
		rt.kind = "streams"
	case n == 4 && raw[3] == "query":
		rt.kind = "query"
	case n == 4 && raw[3] == "events":
		rt.kind = "log"
	case n == 5 && raw[3] == "events":
		rt.kind, rt.eventID = "event-by-id", seg[4]
	case n == 4 && raw[3] == "stats":
		rt.kind = "tenant-stats"
	case n == 4 && raw[3] == "types":
		rt.kind = "tenant-types"
	case n == 4 && raw[3] == "dead-letters":
		rt.kind = "dead-letters"
	case n == 5 && raw[3] == "streams":
		rt.kind, rt.stream = "stream", seg[4]
	case n == 6 && raw[3] == "streams" && raw[5] == "events":
		rt.kind, rt.stream = "stream-events", seg[4]
	case n == 6 && raw[3] == "streams" && raw[5] == "truncate":
		rt.kind, rt.stream = "stream-truncate", seg[4]
	case n == 7 && raw[3] == "streams" && raw[5] == "events":
		rt.kind, rt.stream, rt.version = "event", seg[4], seg[6]
	case n == 6 && raw[3] == "dead-letters" && raw[5] == "retry":
		rt.kind, rt.eventID = "dead-letter-retry", seg[4]
	case n == 6 && raw[3] == "dead-letters" && raw[5] == "discard":
		rt.kind, rt.eventID = "dead-letter-discard", seg[4]
	case n == 4 && raw[3] == "quarantine":
		rt.kind = "tenant-quarantine"
	case n == 4 && raw[3] == "effects":
		rt.kind = "effects"
	case n == 6 && raw[3] == "effects" && (raw[5] == "approve" || raw[5] == "reject"):
		rt.kind, rt.effect = "effect-"+raw[5], seg[4]
	default:
		return route{}, false
	}
	return rt, true
}

// methods lists each route's methods; the first decides what a write is.
var methods = map[string][]string{
	"healthz":             {"GET", "HEAD"},
	"openapi":             {"GET", "HEAD"},
	"metrics":             {"GET", "HEAD"},
	"info":                {"GET", "HEAD"},
	"consumers":           {"GET", "HEAD"},
	"doctor":              {"GET", "HEAD"},
	"streams":             {"GET", "HEAD"},
	"log":                 {"GET", "HEAD", "POST"},
	"query":               {"POST"},
	"stream":              {"GET", "HEAD", "DELETE"},
	"stream-truncate":     {"POST"},
	"stream-events":       {"GET", "HEAD", "POST"},
	"event":               {"GET", "HEAD"},
	"dead-letter-retry":   {"POST"},
	"dead-letter-discard": {"POST"},
	"quarantine":          {"GET", "HEAD"},
	"tenant-quarantine":   {"GET", "HEAD"},
	"quarantine-retry":    {"POST"},
	"quarantine-skip":     {"POST"},
	"effects":             {"GET", "HEAD"},
	"effect-approve":      {"POST"},
	"effect-reject":       {"POST"},
	"stats":               {"GET", "HEAD"},
	"tenants":             {"GET", "HEAD"},
	"tenant-stats":        {"GET", "HEAD"},
	"tenant-types":        {"GET", "HEAD"},
	"event-by-id":         {"GET", "HEAD"},
	"dead-letters":        {"GET", "HEAD"},
}

// route answers one request that passed the Host rule. The order of
// checks: the route, auth, the tenant, the body (read whole), then each
// endpoint's own validation.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	if h.cors(w, r) || h.serveUI(w, r) {
		return
	}
	rt, ok := parseRoute(r.URL.EscapedPath())
	if !ok {
		writeProblem(w, problemf("not-found", "no such path: %s (see /openapi.json)", r.URL.EscapedPath()))
		return
	}
	allowed := methods[rt.kind]
	found := false
	for _, m := range allowed {
		found = found || m == r.Method
	}
	if !found {
		writeProblem(w, problemf("method-not-allowed", "%s is not allowed on this path; allowed: %s", r.Method, strings.Join(allowed, ", ")).
			with("Allow", strings.Join(allowed, ", ")))
		return
	}
	// A query read is a POST for its body, and a read.
	write := (r.Method == http.MethodPost || r.Method == http.MethodDelete) && rt.kind != "query"
	if write && (r.Header.Get("traceparent") != "" || r.Header.Get("tracestate") != "") {
		prop := h.opts.Propagator
		if prop == nil {
			prop = otel.GetTextMapPropagator()
		}
		r = r.WithContext(prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
	}
	switch rt.kind {
	case "healthz":
		h.healthz(w, r)
		return
	case "openapi":
		h.openAPI(w, r)
		return
	case "info", "tenants": // any valid token
		if _, ok := h.lookup(r); !ok {
			writeProblem(w, h.authorize(r, "", false))
			return
		}
	case "metrics", "consumers", "doctor", "stats", "quarantine", "quarantine-retry", "quarantine-skip":
		if p := h.authorize(r, "", write); p != nil {
			writeProblem(w, p)
			return
		}
	default:
		if p := h.authorize(r, rt.tenant, write); p != nil {
			if p.Tenant == "" && p.Name() != "unauthorized" {
				p.Tenant = rt.tenant
			}
			writeProblem(w, p)
			return
		}
	}
	if rt.tenant != "" || strings.HasPrefix(rt.kind, "stream") || rt.kind == "log" || rt.kind == "query" || rt.kind == "event" || strings.HasPrefix(rt.kind, "dead-letter") || rt.kind == "tenant-quarantine" ||
		strings.HasPrefix(rt.kind, "effect") || rt.kind == "event-by-id" || rt.kind == "tenant-stats" || rt.kind == "tenant-types" || rt.kind == "dead-letters" {
		if err := envelope.ValidateTenant(rt.tenant); err != nil {
			p := problemf("invalid-tenant", "%v", err)
			p.Tenant, p.Field = rt.tenant, "tenant"
			writeProblem(w, p)
			return
		}
	}
	if rt.stream != "" || rt.kind == "stream" || rt.kind == "stream-events" || rt.kind == "event" {
		if err := envelope.ValidateStream(rt.stream); err != nil {
			p := problemf("invalid-stream-id", "%v", err)
			p.Tenant, p.Stream, p.Field = rt.tenant, rt.stream, "stream"
			var te *envelope.TooLargeError
			if errors.As(err, &te) {
				p.Limit = ptr(int64(te.Limit))
			}
			writeProblem(w, p)
			return
		}
	}
	if p := checkQuery(r); p != nil {
		p.Tenant, p.Stream = rt.tenant, rt.stream
		writeProblem(w, p)
		return
	}
	if !h.bufferBody(w, r, MaxBodyBytes) {
		return
	}
	switch rt.kind {
	case "info":
		h.info(w, r)
	case "metrics":
		h.metrics(w, r)
	case "consumers":
		h.consumers(w, r)
	case "doctor":
		h.doctor(w, r)
	case "streams":
		h.listStreams(w, r, rt.tenant)
	case "query":
		h.readQuery(w, r, rt.tenant)
	case "log":
		if write {
			h.appendMany(w, r, rt.tenant)
		} else {
			h.readLog(w, r, rt.tenant)
		}
	case "stream":
		if write {
			h.deleteStream(w, r, rt.tenant, rt.stream)
		} else {
			h.streamInfo(w, r, rt.tenant, rt.stream)
		}
	case "stream-truncate":
		h.truncateStream(w, r, rt.tenant, rt.stream)
	case "stream-events":
		if write {
			h.appendStream(w, r, rt.tenant, rt.stream)
		} else {
			h.readStream(w, r, rt.tenant, rt.stream)
		}
	case "event":
		h.readEvent(w, r, rt.tenant, rt.stream, rt.version)
	case "dead-letter-retry":
		h.retryDeadLetter(w, r, rt.tenant, rt.eventID)
	case "dead-letter-discard":
		h.discardDeadLetter(w, r, rt.tenant, rt.eventID)
	case "quarantine", "tenant-quarantine":
		h.listQuarantine(w, r, rt.tenant)
	case "quarantine-retry", "quarantine-skip":
		h.quarantineAction(w, r, rt.name, rt.eventID, strings.TrimPrefix(rt.kind, "quarantine-"))
	case "effects":
		h.listEffects(w, r, rt.tenant)
	case "effect-approve":
		h.decideEffectOnce(w, r, rt.tenant, rt.effect, "approve")
	case "effect-reject":
		h.decideEffectOnce(w, r, rt.tenant, rt.effect, "reject")
	case "stats", "tenant-stats":
		h.stats(w, r, rt.tenant)
	case "tenant-types":
		h.typeCounts(w, r, rt.tenant)
	case "tenants":
		h.listTenants(w, r)
	case "event-by-id":
		h.eventByID(w, r, rt.tenant, rt.eventID)
	case "dead-letters":
		h.deadLetters(w, r, rt.tenant)
	}
}

// corsAllowHeaders and corsExposeHeaders are the CORS lists.
const (
	corsAllowHeaders  = "Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, Last-Event-ID, ce-*"
	corsExposeHeaders = "ETag, Location, Link, Idempotent-Replayed, Retry-After"
)

// cors adds the CORS headers for an allowed origin and answers a
// preflight; it returns true when the request is answered.
func (h *Handler) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(h.opts.CORSOrigins) == 0 {
		return false
	}
	ok := false
	for _, o := range h.opts.CORSOrigins {
		ok = ok || o == "*" || o == origin
	}
	if !ok {
		return false
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", origin)
	hd.Add("Vary", "Origin")
	hd.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		hd.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, DELETE")
		// Browsers do not expand ce-*: name the request's own ce- headers.
		allow := corsAllowHeaders
		for _, name := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
			name = strings.TrimSpace(name)
			if len(name) > 3 && strings.EqualFold(name[:3], "ce-") {
				allow += ", " + name
			}
		}
		hd.Set("Access-Control-Allow-Headers", allow)
		hd.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// queryInt reads a non-negative integer parameter.
func queryInt(q url.Values, name string, def, maxv int64) (int64, *Problem) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || (maxv > 0 && n > maxv) {
		reason := "must be a whole number >= 0"
		if maxv > 0 {
			reason = "must be a whole number from 0 to " + strconv.FormatInt(maxv, 10)
		}
		p := problemf("invalid-parameter", "%s=%q: %s", name, s, reason)
		p.Field, p.Reason = name, reason
		return 0, p
	}
	return n, nil
}

// DefaultLimit and MaxLimit bound a page of a read.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

func queryLimit(q url.Values) (int, *Problem) {
	s := q.Get("limit")
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		reason := "must be a whole number from 1 to 1000"
		p := problemf("invalid-parameter", "limit=%q: %s", s, reason)
		p.Field, p.Reason = "limit", reason
		if err == nil && n > MaxLimit {
			p.Limit = ptr(int64(MaxLimit))
		}
		return 0, p
	}
	return n, nil
}
