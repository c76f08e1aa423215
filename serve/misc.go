package serve

import (
	_ "embed"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/eventlite/eventlite/metrics"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// healthz answers GET /healthz: 200 while the store is open.
func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) {
	if _, err := h.s.Head(r.Context()); err != nil {
		writeProblem(w, problemf("busy", "the store does not answer: %v", err).with("Retry-After", "1"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// infoJSON is GET /v1/info.
type infoJSON struct {
	Version string     `json:"version"`
	Schema  int        `json:"schema"`
	Limits  limitsJSON `json:"limits"`
}

type limitsJSON struct {
	BodyBytes      int `json:"body_bytes"`
	DataBytes      int `json:"data_bytes"`
	EventBytes     int `json:"event_bytes"`
	AttributeBytes int `json:"attribute_bytes"`
	StreamIDBytes  int `json:"stream_id_bytes"`
	ReadLimit      int `json:"read_limit"`
	MaxWaitSeconds int `json:"max_wait_seconds"`
}

// version is the eventlite version /v1/info reports: the module's version
// from the build info, or "(devel)".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/eventlite/eventlite" {
				return d.Version
			}
		}
		if bi.Main.Path == "github.com/eventlite/eventlite" && bi.Main.Version != "" {
			return bi.Main.Version
		}
	}
	return "(devel)"
}

func (h *Handler) info(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, infoJSON{Version: version(), Schema: store.SchemaVersion(), Limits: limitsJSON{
		BodyBytes: MaxBodyBytes, DataBytes: h.opts.MaxDataBytes, EventBytes: h.opts.MaxEventBytes,
		AttributeBytes: 1024, StreamIDBytes: 255, ReadLimit: MaxLimit, MaxWaitSeconds: MaxWait,
	}})
}

// consumersJSON is GET /v1/consumers.
type consumersJSON struct {
	Projections []projectionJSON `json:"projections"`
	Outbox      outboxJSON       `json:"outbox"`
	DeadLetters []deadLetterJSON `json:"dead_letters"`
}

// projectionJSON is a projection's status: its lag is the head position
// less its checkpoint (the positions it has still to apply), and
// quarantined_event the oldest open quarantine entry of the projection
// (the event a stopped projection stopped on), absent when it has none.
type projectionJSON struct {
	projection.Stats
	QuarantinedEvent *quarantinedRefJSON `json:"quarantined_event,omitempty"`
}

// quarantinedRefJSON names a quarantined event: where to open it
// (tenant and id) and where it is in the log.
type quarantinedRefJSON struct {
	Tenant   string `json:"tenant"`
	EventID  string `json:"event_id"`
	Stream   string `json:"stream"`
	Version  int64  `json:"version"`
	Position int64  `json:"position,string"`
	Reason   string `json:"reason"`
}

type outboxJSON struct {
	Pending          int64   `json:"pending"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	DeadLetters      int64   `json:"dead_letters"`
	ParkedStreams    int64   `json:"parked_streams"`
}

type deadLetterJSON struct {
	Tenant   string    `json:"tenant"`
	EventID  string    `json:"event_id"`
	Stream   string    `json:"stream"`
	Version  int64     `json:"version"`
	Position int64     `json:"position,string"`
	Type     string    `json:"type"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error"`
	DeadAt   time.Time `json:"dead_at"`
}

func (h *Handler) consumers(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ps, err := projection.AllStats(ctx, h.s)
	if err != nil {
		writeProblem(w, problemFor(err, "", "", nil))
		return
	}
	st, err := outbox.For(h.s).Stats(ctx)
	if err != nil {
		writeProblem(w, problemFor(err, "", "", nil))
		return
	}
	dls, err := outbox.For(h.s).DeadLetters(ctx, "")
	if err != nil {
		writeProblem(w, problemFor(err, "", "", nil))
		return
	}
	qs, err := projection.Quarantine(h.s).Open(ctx, "")
	if err != nil {
		writeProblem(w, problemFor(err, "", "", nil))
		return
	}
	oldest := map[string]*quarantinedRefJSON{}
	for _, q := range qs { // oldest first
		if oldest[q.Consumer] == nil {
			oldest[q.Consumer] = &quarantinedRefJSON{Tenant: q.Tenant, EventID: q.EventID, Stream: q.Subject, Version: q.Version,
				Position: q.Position, Reason: string(q.Reason)}
		}
	}
	out := consumersJSON{Projections: make([]projectionJSON, 0, len(ps)), DeadLetters: []deadLetterJSON{},
		Outbox: outboxJSON{Pending: st.Pending, OldestAgeSeconds: st.Lag.Seconds(), DeadLetters: st.DeadLetters, ParkedStreams: st.ParkedStreams}}
	for _, p := range ps {
		out.Projections = append(out.Projections, projectionJSON{Stats: p, QuarantinedEvent: oldest[p.Name]})
	}
	for _, d := range dls {
		out.DeadLetters = append(out.DeadLetters, deadLetterJSON{Tenant: d.Tenant, EventID: d.EventID, Stream: d.Stream, Version: d.Version,
			Position: d.Position, Type: d.Type, Attempts: d.Attempts, Error: d.Error, DeadAt: d.DeadAt})
	}
	writeJSON(w, http.StatusOK, out)
}

// doctorOptions are the thresholds GET /v1/doctor uses: the CLI's
// defaults.
var doctorOptions = store.DiagnoseOptions{OutboxAge: 5 * time.Minute, ExecutingAge: 10 * time.Minute,
	DeferralAge: 10 * time.Minute, ProjectionLag: time.Minute}

func (h *Handler) doctor(w http.ResponseWriter, r *http.Request) {
	fs, err := h.s.Diagnose(r.Context(), doctorOptions)
	if err != nil {
		writeProblem(w, problemFor(err, "", "", nil))
		return
	}
	healthy := true
	for _, f := range fs {
		healthy = healthy && f.Severity != store.SeverityProblem
	}
	if fs == nil {
		fs = []store.Finding{}
	}
	writeJSON(w, http.StatusOK, struct {
		Healthy  bool            `json:"healthy"`
		Findings []store.Finding `json:"findings"`
	}{healthy, fs})
}

// metricsHandler is built on first use: the collector reads the store at
// each scrape.
type metricsHandler struct {
	once sync.Once
	h    http.Handler
	err  error
}

func (h *Handler) metrics(w http.ResponseWriter, r *http.Request) {
	m := &h.prom
	m.once.Do(func() {
		var reg *prometheus.Registry
		if reg, m.err = metrics.NewRegistry(h.s, nil); m.err == nil {
			m.h = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		}
	})
	if m.err != nil {
		writeProblem(w, problemf("internal", "metrics: %v", m.err))
		return
	}
	m.h.ServeHTTP(w, r)
}

//go:embed openapi.json
var openAPIDoc []byte

func (h *Handler) openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", ctJSON)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDoc)
}
