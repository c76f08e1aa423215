package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// accessLog writes Options.AccessLog's lines, one Write each.
type accessLog struct {
	mu sync.Mutex
	w  io.Writer
}

// accessLine is one line of the access log. It holds no header, no body,
// no query, no stream id, event id or effect key, and never a secret.
type accessLine struct {
	Time        string  `json:"time"`
	Method      string  `json:"method"`
	Route       string  `json:"route"`
	Status      int     `json:"status"`
	Bytes       int64   `json:"bytes"`
	DurationMS  float64 `json:"duration_ms"`
	Tenant      string  `json:"tenant,omitempty"`
	TokenIndex  *int    `json:"token_index,omitempty"`
	TokenTenant string  `json:"token_tenant,omitempty"`
}

// routePatterns are the routes' patterns, as the access log names them.
var routePatterns = map[string]string{
	"healthz":             "/healthz",
	"openapi":             "/openapi.json",
	"metrics":             "/metrics",
	"info":                "/v1/info",
	"consumers":           "/v1/consumers",
	"doctor":              "/v1/doctor",
	"stats":               "/v1/stats",
	"tenants":             "/v1/tenants",
	"streams":             "/v1/tenants/{tenant}/streams",
	"log":                 "/v1/tenants/{tenant}/events",
	"query":               "/v1/tenants/{tenant}/query",
	"event-by-id":         "/v1/tenants/{tenant}/events/{eventId}",
	"tenant-stats":        "/v1/tenants/{tenant}/stats",
	"tenant-types":        "/v1/tenants/{tenant}/types",
	"dead-letters":        "/v1/tenants/{tenant}/dead-letters",
	"stream":              "/v1/tenants/{tenant}/streams/{stream}",
	"stream-events":       "/v1/tenants/{tenant}/streams/{stream}/events",
	"stream-truncate":     "/v1/tenants/{tenant}/streams/{stream}/truncate",
	"event":               "/v1/tenants/{tenant}/streams/{stream}/events/{version}",
	"dead-letter-retry":   "/v1/tenants/{tenant}/dead-letters/{eventId}/retry",
	"dead-letter-discard": "/v1/tenants/{tenant}/dead-letters/{eventId}/discard",
	"quarantine":          "/v1/quarantine",
	"tenant-quarantine":   "/v1/tenants/{tenant}/quarantine",
	"quarantine-retry":    "/v1/quarantine/{name}/{eventId}/retry",
	"quarantine-skip":     "/v1/quarantine/{name}/{eventId}/skip",
	"effects":             "/v1/tenants/{tenant}/effects",
	"effect-approve":      "/v1/tenants/{tenant}/effects/{key}/approve",
	"effect-reject":       "/v1/tenants/{tenant}/effects/{key}/reject",
}

// logAccess writes r's line when the access log is on. The route is the
// pattern the path matched ("" when none), the tenant the path's.
func (h *Handler) logAccess(r *http.Request, rec *recorder, info *reqInfo, start time.Time) {
	if h.access == nil {
		return
	}
	line := accessLine{
		Time: start.UTC().Format(time.RFC3339Nano), Method: r.Method, Status: rec.status, Bytes: rec.bytes,
		DurationMS: float64(time.Since(start).Microseconds()) / 1000,
	}
	if line.Status == 0 {
		line.Status = http.StatusOK
	}
	switch p := r.URL.Path; p {
	case "/", "/index.html", "/ui/app.js", "/ui/app.css", "/ui/session":
		line.Route = p
	default:
		if rt, ok := parseRoute(r.URL.EscapedPath()); ok {
			line.Route, line.Tenant = routePatterns[rt.kind], rt.tenant
		}
	}
	if info.token >= 0 && info.token < len(h.tokens) {
		line.TokenIndex, line.TokenTenant = ptr(info.token), h.tokens[info.token].tenant
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	h.access.mu.Lock()
	defer h.access.mu.Unlock()
	if _, err := h.access.w.Write(append(b, '\n')); err != nil {
		h.log.Warn("access log", "error", err)
	}
}
