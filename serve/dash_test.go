package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/internal/inside"

	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// appendCorr appends one event with a correlation and causation id
// through the store and returns it as stored.
func (ts *testServer) appendCorr(tenant, stream, typ, corr, cause string) envelopeEvent {
	ts.t.Helper()
	e, err := newEvent(typ, map[string]int{"n": 1})
	if err != nil {
		ts.t.Fatal(err)
	}
	e.Source, e.CorrelationID, e.CausationID = "/test", corr, cause
	if _, err := ts.s.Append(context.Background(), tenant, stream, store.Any, e); err != nil {
		ts.t.Fatal(err)
	}
	evs := ts.events(tenant, stream)
	return evs[len(evs)-1]
}

func positions(t testing.TB, body []byte) []string {
	t.Helper()
	var evs []map[string]any
	if err := json.Unmarshal(body, &evs); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	out := []string{}
	for _, e := range evs {
		out = append(out, e["position"].(string))
	}
	return out
}

// The log filters by stream prefix and correlation id, reads backward
// with paging, and refuses a backward live read or long poll.
func TestLogFiltersOverHTTP(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendCorr("a", "order-1", "placed", "c1", "")
	ts.appendCorr("a", "cart-1", "added", "c1", "")
	ts.appendCorr("b", "order-1", "placed", "c1", "")
	ts.appendCorr("a", "order-2", "placed", "c2", "")
	ts.appendCorr("a", "order-1", "paid", "c1", "")
	tests := []struct {
		query string
		want  []string
		next  string
	}{
		{"stream_prefix=order-", []string{"1", "4", "5"}, ""},
		{"correlationid=c1", []string{"1", "2", "5"}, ""},
		{"correlationid=c1&stream_prefix=cart", []string{"2"}, ""},
		{"direction=backward", []string{"5", "4", "2", "1"}, ""},
		{"direction=backward&limit=2", []string{"5", "4"}, "from=3"},
		{"direction=backward&from=3&limit=2", []string{"2", "1"}, ""},
		{"direction=backward&stream_prefix=order&type=placed", []string{"4", "1"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			r := ts.do("GET", "/v1/tenants/a/events?"+tc.query, nil)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if d := cmp.Diff(tc.want, positions(t, r.body)); d != "" {
				t.Fatalf("positions (-want +got):\n%s", d)
			}
			link := r.header.Get("Link")
			if (tc.next == "") != (link == "") || !strings.Contains(link, tc.next) {
				t.Fatalf("Link %q, want one with %q", link, tc.next)
			}
		})
	}
	for _, q := range []string{"direction=sideways", "direction=backward&wait=1"} {
		ts.do("GET", "/v1/tenants/a/events?"+q, nil).wantProblem(t, 400, "invalid-parameter")
	}
	ts.do("GET", "/v1/tenants/a/events?direction=backward", nil, "Accept", "text/event-stream").wantProblem(t, 400, "invalid-parameter")

	// Live with a stream filter: only the matching events arrive.
	sse := openSSE(t, ts.url+"/v1/tenants/a/events?stream_prefix=order-2")
	if ids := sse.events(1); ids[0] != "4" {
		t.Fatalf("history %v, want [4]", ids)
	}
	sse.until("caught-up")
	ts.appendCorr("a", "order-1", "x", "", "")
	want := ts.appendCorr("a", "order-2", "x", "", "")
	if ids := sse.events(1); ids[0] != strconv.FormatInt(want.Position, 10) {
		t.Fatalf("live %v, want [%d] (order-2 only)", ids, want.Position)
	}
}

// An event is found by id in its tenant only; stats count the tenant's
// events and, store-wide, show the file sizes; tenants lists them.
func TestEventByIDStatsTenants(t *testing.T) {
	ts := newServer(t, nil)
	e := ts.appendCorr("a", "s", "x", "c", "")
	ts.appendCorr("b", "s", "x", "c", "")
	r := ts.do("GET", "/v1/tenants/a/events/"+url.PathEscape(e.ID), nil)
	if r.status != 200 || r.header.Get("Content-Type") != ctStructured || r.json(t)["id"] != e.ID || r.json(t)["correlationid"] != "c" {
		t.Fatalf("event by id: %d %s", r.status, r.body)
	}
	ts.do("GET", "/v1/tenants/b/events/"+url.PathEscape(e.ID), nil).wantProblem(t, 404, "event-not-found")

	st := ts.do("GET", "/v1/tenants/a/stats", nil).json(t)
	if st["tenant"] != "a" || st["events"] != float64(1) || st["streams"] != float64(1) || st["last_position"] != "1" ||
		st["appended_last_minute"] != float64(1) || st["file_bytes"] != nil {
		t.Fatalf("tenant stats: %v", st)
	}
	all := ts.do("GET", "/v1/stats", nil).json(t)
	if all["events"] != float64(2) || all["last_position"] != "2" || all["file_bytes"].(float64) <= 0 || all["wal_bytes"] == nil {
		t.Fatalf("store stats: %v", all)
	}
	tn := ts.do("GET", "/v1/tenants", nil).json(t)
	if d := cmp.Diff(map[string]any{"tenants": []any{"a", "b"}, "all": true, "read_only": false, "session": false}, tn); d != "" {
		t.Fatalf("tenants (-want +got):\n%s", d)
	}
}

// The appends-per-second figure counts the last minute by the store's
// clock.
func TestStatsRate(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	ts := serverOn(t, storetest.MustOpen(t, &store.Options{Now: clock}), nil)
	for range 30 {
		ts.appendCorr("a", "s", "x", "", "")
	}
	st := ts.do("GET", "/v1/tenants/a/stats", nil).json(t)
	if st["appended_last_minute"] != float64(30) || st["appends_per_second"] != 0.5 {
		t.Fatalf("stats: %v", st)
	}
}

// Tokens: a tenant's token sees its tenant only and is told which; the
// store-wide stats need a * token.
func TestDashboardRoutesWithTokens(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: []serve.Token{{Secret: "a", Tenant: "a", ReadOnly: true}, {Secret: "all", Tenant: "*"}}})
	ts.appendCorr("a", "s", "x", "", "")
	ts.appendCorr("b", "s", "x", "", "")
	tn := ts.do("GET", "/v1/tenants", nil, "Authorization", "Bearer a").json(t)
	if d := cmp.Diff(map[string]any{"tenants": []any{"a"}, "all": false, "read_only": true, "session": false}, tn); d != "" {
		t.Fatalf("tenants (-want +got):\n%s", d)
	}
	ts.do("GET", "/v1/tenants", nil).wantProblem(t, 401, "unauthorized")
	ts.do("GET", "/v1/stats", nil, "Authorization", "Bearer a").wantProblem(t, 403, "tenant-forbidden")
	ts.do("GET", "/v1/tenants/b/stats", nil, "Authorization", "Bearer a").wantProblem(t, 403, "tenant-forbidden")
	ts.do("GET", "/v1/tenants/b/dead-letters", nil, "Authorization", "Bearer a").wantProblem(t, 403, "tenant-forbidden")
	if r := ts.do("GET", "/v1/stats", nil, "Authorization", "Bearer all"); r.status != 200 {
		t.Fatalf("* token: %d %s", r.status, r.body)
	}
	if r := ts.do("GET", "/v1/tenants/a/dead-letters", nil, "Authorization", "Bearer a"); r.status != 200 || string(r.body) != "{\"dead_letters\":[]}\n" {
		t.Fatalf("dead letters: %d %s", r.status, r.body)
	}
	// Dead-letter both events as a relay would: each tenant sees its own.
	ctx := context.Background()
	l, err := store.Inner(inside.Key{}, ts.s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, []outboxmark.Failure{{Position: 1, Error: "refused <b>"}, {Position: 2, Error: "refused"}})
	}); err != nil {
		t.Fatal(err)
	}
	var dl struct {
		DeadLetters []struct {
			Tenant, Stream, Error string
			Position              string
		} `json:"dead_letters"`
	}
	r := ts.do("GET", "/v1/tenants/a/dead-letters", nil, "Authorization", "Bearer a")
	if err := json.Unmarshal(r.body, &dl); err != nil || len(dl.DeadLetters) != 1 || dl.DeadLetters[0].Tenant != "a" ||
		dl.DeadLetters[0].Position != "1" || dl.DeadLetters[0].Error != "refused <b>" {
		t.Fatalf("dead letters of a: %s (%v)", r.body, err)
	}
}

// GET .../types counts the tenant's events by type, most first and then
// by type, and only the tenant's; a tenant token reads its own only.
func TestTypeCounts(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: []serve.Token{{Secret: "all", Tenant: "*"}, {Secret: "acme", Tenant: "acme", ReadOnly: true}}})
	for i, typ := range []string{"b.placed", "a.paid", "b.placed", "c.shipped", "a.paid", "b.placed"} {
		mustAppend(t, ts.s, "acme", fmt.Sprintf("order-%d", i%2), event(t, "", typ, `{}`, "", ""))
	}
	mustAppend(t, ts.s, "globex", "order-1", event(t, "", "b.placed", `{}`, "", ""))
	r := ts.do("GET", "/v1/tenants/acme/types", nil, "Authorization", "Bearer acme")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got, want := strings.TrimSpace(string(r.body)), `{"types":[{"type":"b.placed","events":3},{"type":"a.paid","events":2},{"type":"c.shipped","events":1}]}`; got != want {
		t.Fatalf("types %s, want %s", got, want)
	}
	if r := ts.do("GET", "/v1/tenants/nobody/types", nil, "Authorization", "Bearer all"); r.status != 200 || strings.TrimSpace(string(r.body)) != `{"types":[]}` {
		t.Fatalf("a tenant without events: %d %s", r.status, r.body)
	}
	ts.do("GET", "/v1/tenants/globex/types", nil, "Authorization", "Bearer acme").wantProblem(t, 403, "tenant-forbidden")
}
