package serve

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/eventlite/eventlite/store"

	"github.com/eventlite/eventlite/store/outbox"
)

// The routes a dashboard needs beside the reads: counts and rates, the
// tenants a token sees, an event by its id and a tenant's dead letters.

// statsJSON is GET /v1/stats (every tenant; file sizes included) and GET
// /v1/tenants/{tenant}/stats.
type statsJSON struct {
	Tenant             string  `json:"tenant,omitempty"`
	Events             int64   `json:"events"`
	Streams            int64   `json:"streams"`
	LastPosition       int64   `json:"last_position,string"`
	AppendedLastMinute int64   `json:"appended_last_minute"`
	AppendsPerSecond   float64 `json:"appends_per_second"`
	FileBytes          *int64  `json:"file_bytes,omitempty"`
	WALBytes           *int64  `json:"wal_bytes,omitempty"`
}

// stats answers GET /v1/stats (tenant "") and GET .../stats.
func (h *Handler) stats(w http.ResponseWriter, r *http.Request, tenant string) {
	st, err := h.s.Inventory().Stats(r.Context(), tenant)
	if err != nil {
		writeProblem(w, problemFor(err, tenant, "", nil))
		return
	}
	out := statsJSON{Tenant: tenant, Events: st.Events, Streams: st.Streams, LastPosition: st.LastPosition,
		AppendedLastMinute: st.AppendedLastMinute, AppendsPerSecond: float64(st.AppendedLastMinute) / 60}
	if tenant == "" { // the file is every tenant's: a * token's to see
		out.FileBytes, out.WALBytes = &st.FileBytes, &st.WALBytes
	}
	writeJSON(w, http.StatusOK, out)
}

// typeCounts answers GET .../types: the tenant's events counted by type,
// most first (then by type), as {"types":[{"type","events"}]}.
func (h *Handler) typeCounts(w http.ResponseWriter, r *http.Request, tenant string) {
	cs, err := h.s.Inventory().TypeCounts(r.Context(), tenant)
	if err != nil {
		writeProblem(w, problemFor(err, tenant, "", nil))
		return
	}
	type typeJSON struct {
		Type   string `json:"type"`
		Events int64  `json:"events"`
	}
	out := struct {
		Types []typeJSON `json:"types"`
	}{Types: make([]typeJSON, 0, len(cs))}
	for t, n := range cs {
		out.Types = append(out.Types, typeJSON{t, n})
	}
	slices.SortFunc(out.Types, func(a, b typeJSON) int {
		if a.Events != b.Events {
			return cmp.Compare(b.Events, a.Events)
		}
		return strings.Compare(a.Type, b.Type)
	})
	writeJSON(w, http.StatusOK, out)
}

// listTenants answers GET /v1/tenants: the tenants the request's token
// may read (every tenant with a stream, for a * token or without
// tokens), and what the token allows.
func (h *Handler) listTenants(w http.ResponseWriter, r *http.Request) {
	a, _ := h.lookup(r) // the route checked it
	out := struct {
		Tenants  []string `json:"tenants"`
		All      bool     `json:"all"`
		ReadOnly bool     `json:"read_only"`
		Session  bool     `json:"session"`
	}{All: a.all || a.tenant == AllTenants, ReadOnly: a.readOnly, Session: a.cookie}
	if out.All {
		ts, err := h.s.Inventory().Tenants(r.Context())
		if err != nil {
			writeProblem(w, problemFor(err, "", "", nil))
			return
		}
		out.Tenants = ts
	} else {
		out.Tenants = []string{a.tenant}
	}
	writeJSON(w, http.StatusOK, out)
}

// eventByID answers GET .../events/{event-id}.
func (h *Handler) eventByID(w http.ResponseWriter, r *http.Request, tenant, id string) {
	e, err := h.s.EventByID(r.Context(), tenant, id)
	if errors.Is(err, store.ErrNotFound) {
		p := problemf("event-not-found", "tenant %q has no event with id %q", tenant, id)
		p.Tenant = tenant
		writeProblem(w, p)
		return
	}
	if err != nil {
		writeProblem(w, problemFor(err, tenant, "", nil))
		return
	}
	b := append(e.AppendJSON(nil), '\n')
	w.Header().Set("Content-Type", ctStructured)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// deadLetters answers GET .../dead-letters: the tenant's dead letters in
// position order.
func (h *Handler) deadLetters(w http.ResponseWriter, r *http.Request, tenant string) {
	dls, err := outbox.For(h.s).DeadLetters(r.Context(), tenant)
	if err != nil {
		writeProblem(w, problemFor(err, tenant, "", nil))
		return
	}
	out := struct {
		DeadLetters []deadLetterJSON `json:"dead_letters"`
	}{DeadLetters: make([]deadLetterJSON, 0, len(dls))}
	for _, d := range dls {
		out.DeadLetters = append(out.DeadLetters, deadLetterJSON{Tenant: d.Tenant, EventID: d.EventID, Stream: d.Stream, Version: d.Version,
			Position: d.Position, Type: d.Type, Attempts: d.Attempts, Error: d.Error, DeadAt: d.DeadAt})
	}
	writeJSON(w, http.StatusOK, out)
}
