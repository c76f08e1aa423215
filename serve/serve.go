package serve

import (
	"errors"
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
	// WriteTimeout bounds each write to a live reader: one that does not
	// take its data within it is dropped (it resumes on reconnect).
	// Default 10s.
	WriteTimeout time.Duration
	// MaxDataBytes and MaxEventBytes are the store's limits, shown in
	// /v1/info. Default envelope's defaults.
	MaxDataBytes, MaxEventBytes int
	// Logger receives structured logs. Tokens are never logged. Default:
	// none.
	Logger hclog.Logger
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
	for _, t := range o.Tokens {
		if t.Secret == "" {
			return nil, errors.New("serve: a token has an empty secret")
		}
	}
	h := &Handler{
		s: s, opts: o, log: o.Logger, tokens: hashTokens(o.Tokens),
		inFlight: make(map[string]bool),
		closing:  make(chan struct{}),
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
	case n < 4 || raw[0] != "v1" || raw[1] != "tenants":
		return route{}, false
	}
	rt := route{tenant: seg[2]}
	switch {
	case n == 4 && raw[3] == "streams":
		rt.kind = "streams"
	case n == 4 && raw[3] == "events":
		rt.kind = "log"
	case n == 5 && raw[3] == "events":
		rt.kind, rt.eventID = "event-by-id", seg[4]
	case n == 4 && raw[3] == "stats":
		rt.kind = "tenant-stats"
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
	"healthz":           {"GET", "HEAD"},
	"openapi":           {"GET", "HEAD"},
	"metrics":           {"GET", "HEAD"},
	"info":              {"GET", "HEAD"},
	"consumers":         {"GET", "HEAD"},
	"doctor":            {"GET", "HEAD"},
	"streams":           {"GET", "HEAD"},
	"log":               {"GET", "HEAD", "POST"},
	"stream":            {"GET", "HEAD", "DELETE"},
	"stream-truncate":   {"POST"},
	"stream-events":     {"GET", "HEAD", "POST"},
	"event":             {"GET", "HEAD"},
	"dead-letter-retry": {"POST"},
	"effects":           {"GET", "HEAD"},
	"effect-approve":    {"POST"},
	"effect-reject":     {"POST"},
	"stats":             {"GET", "HEAD"},
	"tenants":           {"GET", "HEAD"},
	"tenant-stats":      {"GET", "HEAD"},
	"event-by-id":       {"GET", "HEAD"},
	"dead-letters":      {"GET", "HEAD"},
}

// ServeHTTP answers one request. The order of checks: the route, auth,
// the tenant, then each endpoint's own validation.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	write := r.Method == http.MethodPost || r.Method == http.MethodDelete
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
	case "metrics", "consumers", "doctor", "stats":
		if p := h.authorize(r, "", false); p != nil {
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
	if rt.tenant != "" || strings.HasPrefix(rt.kind, "stream") || rt.kind == "log" || rt.kind == "event" || rt.kind == "dead-letter-retry" ||
		strings.HasPrefix(rt.kind, "effect") || rt.kind == "event-by-id" || rt.kind == "tenant-stats" || rt.kind == "dead-letters" {
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
	case "effects":
		h.listEffects(w, r, rt.tenant)
	case "effect-approve":
		h.decideEffect(w, r, rt.tenant, rt.effect, "approve")
	case "effect-reject":
		h.decideEffect(w, r, rt.tenant, rt.effect, "reject")
	case "stats", "tenant-stats":
		h.stats(w, r, rt.tenant)
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
