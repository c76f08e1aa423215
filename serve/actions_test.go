package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/inside"

	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/outbox"
)

// actionTokens: * write, * read-only, acme write, acme read-only.
var actionTokens = []serve.Token{{Secret: "all", Tenant: "*"}, {Secret: "all-ro", Tenant: "*", ReadOnly: true},
	{Secret: "acme", Tenant: "acme"}, {Secret: "acme-ro", Tenant: "acme", ReadOnly: true}}

func bearer(secret string) []string { return []string{"Authorization", "Bearer " + secret} }

func with(h []string, kv ...string) []string { return append(append([]string{}, h...), kv...) }

// quarantineFixture: acme's projection "orders" stopped on acme's event
// q-2 (position 2, checkpoint 1), and the consumer "mailer" holding
// globex's event g-1.
func quarantineFixture(t *testing.T, ts *testServer) {
	t.Helper()
	ctx := context.Background()
	storeAppend(t, ts, "acme", "order-1", 3, "com.acme.order")
	storeAppend(t, ts, "globex", "order-1", 1, "com.globex.order")
	if err := ts.s.Update(ctx, func(tx *store.Tx) error {
		if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "orders", 1, nil); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, "orders", string(projection.StatusStopped), "quarantined event q-2 at position 2"); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "orders", Reason: string(projection.ReasonHandlerError), Tenant: "acme", Subject: "order-1",
			Version: 2, Position: 2, EventID: "q-2", Event: []byte(`{"type":"com.acme.order"}`), Error: "amount is not a number", Attempts: 3}); err != nil {
			return err
		}
		return store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "mailer", Reason: string(projection.ReasonUninterpretable), Tenant: "globex", Subject: "order-1",
			Version: 1, EventID: "g-1", Event: []byte(`{"type":"com.globex.order"}`), Error: "unknown type", Attempts: 1})
	}); err != nil {
		t.Fatal(err)
	}
}

// storeAppend appends n events of type typ straight to the store.
func storeAppend(t *testing.T, ts *testServer, tenant, stream string, n int, typ string) {
	t.Helper()
	for range n {
		mustAppend(t, ts.s, tenant, stream, event(t, "", typ, `{}`, "", ""))
	}
}

type quarantineList struct {
	Quarantine []struct {
		Name, Kind, Tenant, Stream, Type, Reason, Error string
		EventID                                         string     `json:"event_id"`
		Position                                        string     `json:"position"`
		Attempts                                        int        `json:"attempts"`
		RetryRequestedAt                                *time.Time `json:"retry_requested_at"`
	} `json:"quarantine"`
}

func decodeInto[T any](t *testing.T, r response, want int) T {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d: %s", r.status, want, r.body)
	}
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	return v
}

// The quarantine list: every open entry for a * token (with the event
// id, the projection's name and the reason), a tenant's own for its
// token, one name's with ?name=, an unknown name 404.
func TestQuarantineList(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: actionTokens})
	quarantineFixture(t, ts)
	l := decodeInto[quarantineList](t, ts.do("GET", "/v1/quarantine", nil, bearer("all-ro")...), 200)
	if len(l.Quarantine) != 2 {
		t.Fatalf("%d entries: %+v", len(l.Quarantine), l)
	}
	q := l.Quarantine[0]
	if q.Name != "orders" || q.Kind != "projection" || q.EventID != "q-2" || q.Tenant != "acme" || q.Stream != "order-1" ||
		q.Reason != "handler_error" || q.Error != "amount is not a number" || q.Position != "2" || q.Type != "com.acme.order" || q.Attempts != 3 {
		t.Fatalf("entry %+v", q)
	}
	if q := l.Quarantine[1]; q.Name != "mailer" || q.Kind != "consumer" || q.Reason != "uninterpretable" {
		t.Fatalf("entry %+v", q)
	}
	l = decodeInto[quarantineList](t, ts.do("GET", "/v1/tenants/acme/quarantine", nil, bearer("acme-ro")...), 200)
	if len(l.Quarantine) != 1 || l.Quarantine[0].EventID != "q-2" {
		t.Fatalf("acme's entries: %+v", l)
	}
	l = decodeInto[quarantineList](t, ts.do("GET", "/v1/quarantine?name=mailer", nil, bearer("all")...), 200)
	if len(l.Quarantine) != 1 || l.Quarantine[0].EventID != "g-1" {
		t.Fatalf("mailer's entries: %+v", l)
	}
	ts.do("GET", "/v1/quarantine?name=nobody", nil, bearer("all")...).wantProblem(t, 404, "quarantine-not-found")
	ts.do("GET", "/v1/quarantine", nil, bearer("acme")...).wantProblem(t, 403, "tenant-forbidden")
	ts.do("GET", "/v1/tenants/globex/quarantine", nil, bearer("acme")...).wantProblem(t, 403, "tenant-forbidden")
}

// Retry marks the entry, skip resolves it and moves the stopped
// projection past the event; both need a * write token, and a repeated
// request with its Idempotency-Key gets the first answer without acting
// again.
func TestQuarantineRetryAndSkip(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: actionTokens})
	ctx := context.Background()
	quarantineFixture(t, ts)
	for _, secret := range []string{"all-ro", "acme", "acme-ro"} {
		r := ts.do("POST", "/v1/quarantine/orders/q-2/retry", nil, bearer(secret)...)
		if r.status != 403 {
			t.Fatalf("token %s: retry answered %d: %s", secret, r.status, r.body)
		}
	}
	if rs, err := projection.Quarantine(ts.s).Retries(ctx, "orders"); err != nil || len(rs) != 0 {
		t.Fatalf("a refused retry marked %v, %v", rs, err)
	}

	key := with(bearer("all"), "Idempotency-Key", "retry-q2")
	first := ts.do("POST", "/v1/quarantine/orders/q-2/retry", nil, key...)
	type result struct {
		Action  string `json:"action"`
		Entries []struct {
			EventID          string     `json:"event_id"`
			RetryRequestedAt *time.Time `json:"retry_requested_at"`
			Resolution       string     `json:"resolution"`
		} `json:"entries"`
	}
	res := decodeInto[result](t, first, 200)
	if res.Action != "retry" || len(res.Entries) != 1 || res.Entries[0].EventID != "q-2" || res.Entries[0].RetryRequestedAt == nil {
		t.Fatalf("retry answer %s", first.body)
	}
	rs, err := projection.Quarantine(ts.s).Retries(ctx, "orders")
	if err != nil || len(rs) != 1 || rs[0].EventID != "q-2" {
		t.Fatalf("marked for retry: %v, %v", rs, err)
	}
	again := ts.do("POST", "/v1/quarantine/orders/q-2/retry", nil, key...)
	if again.status != 200 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d %q replayed=%q, want the first answer %s", again.status, again.body, again.header.Get("Idempotent-Replayed"), first.body)
	}
	// The key on another path is another request.
	ts.do("POST", "/v1/quarantine/orders/q-2/skip", nil, key...).wantProblem(t, 422, "idempotency-key-mismatch")

	skipKey := with(bearer("all"), "Idempotency-Key", "skip-q2")
	first = ts.do("POST", "/v1/quarantine/orders/q-2/skip", nil, skipKey...)
	res = decodeInto[result](t, first, 200)
	if res.Action != "skip" || len(res.Entries) != 1 || res.Entries[0].Resolution != "skipped" {
		t.Fatalf("skip answer %s", first.body)
	}
	if open, err := projection.Quarantine(ts.s).Open(ctx, "orders"); err != nil || len(open) != 0 {
		t.Fatalf("open after skip: %v, %v", open, err)
	}
	rec, err := projection.Records(ts.s).Get(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := projection.Records(ts.s).Checkpoint(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != projection.StatusActive || cp != 2 {
		t.Fatalf("the projection after skip: %+v at checkpoint %d, want active at 2", rec, cp)
	}
	again = ts.do("POST", "/v1/quarantine/orders/q-2/skip", nil, skipKey...)
	if again.status != 200 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeated skip: %d %s", again.status, again.body)
	}
	// Without the key, the entry is gone.
	ts.do("POST", "/v1/quarantine/orders/q-2/skip", nil, bearer("all")...).wantProblem(t, 404, "quarantine-not-found")
	ts.do("POST", "/v1/quarantine/nobody/x/retry", nil, bearer("all")...).wantProblem(t, 404, "quarantine-not-found")
	ts.do("GET", "/v1/quarantine/orders/q-2/retry", nil, bearer("all")...).wantProblem(t, 405, "method-not-allowed")
}

// Discard gives a dead letter up (a tenant's write token acts on its own
// tenant's), retry takes an Idempotency-Key too; a repeat with the key
// answers the first answer, read-only and other tenants' tokens are
// refused.
func TestDeadLetterDiscardAndRetryKeys(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: actionTokens})
	ctx := context.Background()
	storeAppend(t, ts, "acme", "order-1", 2, "com.acme.order")
	storeAppend(t, ts, "globex", "order-1", 1, "com.globex.order")
	l, err := store.Inner(inside.Key{}, ts.s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, []outboxmark.Failure{{Position: 1, Error: "refused"}, {Position: 2, Error: "refused"}, {Position: 3, Error: "refused"}})
	}); err != nil {
		t.Fatal(err)
	}
	dls, err := outbox.For(ts.s).DeadLetters(ctx, "acme")
	if err != nil || len(dls) != 2 {
		t.Fatalf("dead letters %v, %v", dls, err)
	}
	first, second := dls[0].EventID, dls[1].EventID
	discard := func(id string) string { return "/v1/tenants/acme/dead-letters/" + id + "/discard" }

	ts.do("POST", discard(first), nil, bearer("acme-ro")...).wantProblem(t, 403, "read-only")
	ts.do("POST", discard(first), nil, bearer("all-ro")...).wantProblem(t, 403, "read-only")
	g, _ := outbox.For(ts.s).DeadLetters(ctx, "globex")
	ts.do("POST", "/v1/tenants/globex/dead-letters/"+g[0].EventID+"/discard", nil, bearer("acme")...).wantProblem(t, 403, "tenant-forbidden")

	key := with(bearer("acme"), "Idempotency-Key", "discard-1")
	r := ts.do("POST", discard(first), nil, key...)
	got := decodeInto[struct {
		Discarded struct {
			EventID string `json:"event_id"`
			Tenant  string `json:"tenant"`
		} `json:"discarded"`
	}](t, r, 200)
	if got.Discarded.EventID != first || got.Discarded.Tenant != "acme" {
		t.Fatalf("discard answer %s", r.body)
	}
	if dls, _ := outbox.For(ts.s).DeadLetters(ctx, "acme"); len(dls) != 1 || dls[0].EventID != second {
		t.Fatalf("dead letters after discard: %v", dls)
	}
	again := ts.do("POST", discard(first), nil, key...)
	if again.status != 200 || !bytes.Equal(again.body, r.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeated discard: %d %s", again.status, again.body)
	}
	ts.do("POST", discard(first), nil, bearer("acme")...).wantProblem(t, 404, "dead-letter-not-found")

	// Retry with a key: 204, then 204 again from the ledger, where
	// without the key the second would be 404.
	rkey := with(bearer("acme"), "Idempotency-Key", "retry-2")
	retry := "/v1/tenants/acme/dead-letters/" + second + "/retry"
	if r := ts.do("POST", retry, nil, rkey...); r.status != http.StatusNoContent {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	if r := ts.do("POST", retry, nil, rkey...); r.status != http.StatusNoContent || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeated retry: %d %s replayed=%q", r.status, r.body, r.header.Get("Idempotent-Replayed"))
	}
	ts.do("POST", retry, nil, bearer("acme")...).wantProblem(t, 404, "dead-letter-not-found")
	ts.do("POST", retry, nil, with(bearer("acme"), "Idempotency-Key", "")...).wantProblem(t, 400, "invalid-idempotency-key")
}

// Approve and reject take an Idempotency-Key: a repeat gets the first
// answer, the key with another body is a mismatch, and a refusal
// (a problem) keeps its type and is not recorded.
func TestEffectDecisionKeys(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: actionTokens})
	c := &calls{}
	request(t, ts.s, refund("acme", "refund-1"), c)
	request(t, ts.s, refund("acme", "refund-2"), c)
	hash := ts.effect("acme", "refund-1").ArgsHash()
	h := with(bearer("acme"), "Content-Type", "application/json", "Idempotency-Key", "approve-1")
	body := []byte(`{"args_hash":"` + hash + `","by":"ops"}`)
	first := ts.do("POST", "/v1/tenants/acme/effects/refund-1/approve", body, h...)
	if first.status != 200 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("approve: %d %s", first.status, first.body)
	}
	again := ts.do("POST", "/v1/tenants/acme/effects/refund-1/approve", body, h...)
	if again.status != 200 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeated approve: %d %s", again.status, again.body)
	}
	ts.do("POST", "/v1/tenants/acme/effects/refund-1/approve", []byte(`{"args_hash":"`+hash+`","by":"someone else"}`), h...).
		wantProblem(t, 422, "idempotency-key-mismatch")
	rk := with(bearer("acme"), "Content-Type", "application/json", "Idempotency-Key", "reject-1")
	// A malformed body is refused as a problem and not recorded: the key
	// then serves the corrected request.
	ts.do("POST", "/v1/tenants/acme/effects/refund-2/reject", []byte(`{"nope":1}`), rk...).wantProblem(t, 400, "invalid-body")
	r := ts.do("POST", "/v1/tenants/acme/effects/refund-2/reject", []byte(`{"by":"ops","reason":"no"}`), rk...)
	if r.status != 200 || ts.effect("acme", "refund-2").State != effect.Rejected {
		t.Fatalf("reject after a refusal with the same key: %d %s", r.status, r.body)
	}
	if got := c.got(); len(got) != 0 {
		t.Fatalf("a decision ran the effect: %v", got)
	}
}

// /v1/consumers gives each projection's lag (the head position less its
// checkpoint) and, for one stopped on a quarantined event, that event's
// tenant, id and position; a projection without an open entry has none.
func TestConsumersLagAndQuarantinedEvent(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: actionTokens})
	quarantineFixture(t, ts)
	type proj struct {
		Name             string `json:"name"`
		Checkpoint       string `json:"checkpoint"`
		Head             string `json:"head"`
		Lag              int64  `json:"lag"`
		Status           string `json:"status"`
		QuarantinedEvent *struct {
			Tenant   string `json:"tenant"`
			EventID  string `json:"event_id"`
			Stream   string `json:"stream"`
			Version  int64  `json:"version"`
			Position string `json:"position"`
		} `json:"quarantined_event"`
	}
	got := decodeInto[struct {
		Projections []proj `json:"projections"`
	}](t, ts.do("GET", "/v1/consumers", nil, bearer("all-ro")...), 200)
	if len(got.Projections) != 1 {
		t.Fatalf("projections %+v", got.Projections)
	}
	p := got.Projections[0]
	if p.Name != "orders" || p.Status != "stopped" || p.Checkpoint != "1" || p.Head != "4" || p.Lag != 3 {
		t.Fatalf("projection %+v", p)
	}
	if q := p.QuarantinedEvent; q == nil || q.Tenant != "acme" || q.EventID != "q-2" || q.Position != "2" || q.Stream != "order-1" || q.Version != 2 {
		t.Fatalf("quarantined event %+v", q)
	}
	// Skipped, the entry closes and the projection names no event.
	if r := ts.do("POST", "/v1/quarantine/orders/q-2/skip", nil, bearer("all")...); r.status != 200 {
		t.Fatalf("skip: %d %s", r.status, r.body)
	}
	got = decodeInto[struct {
		Projections []proj `json:"projections"`
	}](t, ts.do("GET", "/v1/consumers", nil, bearer("all-ro")...), 200)
	if q := got.Projections[0].QuarantinedEvent; q != nil {
		t.Fatalf("after skip, quarantined event %+v", q)
	}
}

// The keys of store-wide actions (quarantine retry and skip) live in a
// namespace of their own in the ledger tenant _store, which is also a
// valid tenant name: a real tenant _store discarding a dead letter with
// the key K and a quarantine skip with the same key K both act and each
// replays its own answer.
func TestStoreWideKeysDoNotMeetTenantStore(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: actionTokens})
	ctx := context.Background()
	quarantineFixture(t, ts)
	storeAppend(t, ts, "_store", "order-1", 1, "com.store.order")
	l, err := store.Inner(inside.Key{}, ts.s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	head := ts.head()
	if err := ts.s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, []outboxmark.Failure{{Position: head, Error: "refused"}})
	}); err != nil {
		t.Fatal(err)
	}
	dls, err := outbox.For(ts.s).DeadLetters(ctx, "_store")
	if err != nil || len(dls) != 1 {
		t.Fatalf("dead letters of _store: %v, %v", dls, err)
	}
	key := with(bearer("all"), "Idempotency-Key", "K")
	discard := ts.do("POST", "/v1/tenants/_store/dead-letters/"+dls[0].EventID+"/discard", nil, key...)
	if discard.status != 200 {
		t.Fatalf("discard: %d %s", discard.status, discard.body)
	}
	skip := ts.do("POST", "/v1/quarantine/orders/q-2/skip", nil, key...)
	if skip.status != 200 || skip.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("skip with the key tenant _store used: %d %s replayed=%q", skip.status, skip.body, skip.header.Get("Idempotent-Replayed"))
	}
	if open, err := projection.Quarantine(ts.s).Open(ctx, "orders"); err != nil || len(open) != 0 {
		t.Fatalf("after skip, open entries %v, %v", open, err)
	}
	for _, c := range []struct {
		path string
		want response
	}{{"/v1/tenants/_store/dead-letters/" + dls[0].EventID + "/discard", discard}, {"/v1/quarantine/orders/q-2/skip", skip}} {
		r := ts.do("POST", c.path, nil, key...)
		if r.status != 200 || !bytes.Equal(r.body, c.want.body) || r.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("repeat of %s: %d %s", c.path, r.status, r.body)
		}
	}
}

// A cancelled request to any of the page's actions changes nothing and
// its handler returns: the dead letter stays (retry, discard), the
// quarantine entry stays open with no retry asked (retry, skip), the
// effect still awaits approval (approve, reject), and no key is
// recorded, so the same request with the same Idempotency-Key on a live
// connection then acts. The lists return too.
func TestCancelledActionsChangeNothing(t *testing.T) {
	ts := newServer(t, &serve.Options{Tokens: actionTokens})
	ctx := context.Background()
	quarantineFixture(t, ts)
	l, err := store.Inner(inside.Key{}, ts.s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, []outboxmark.Failure{{Position: 1, Error: "refused"}, {Position: 3, Error: "refused"}})
	}); err != nil {
		t.Fatal(err)
	}
	dls, err := outbox.For(ts.s).DeadLetters(ctx, "acme")
	if err != nil || len(dls) != 2 {
		t.Fatalf("dead letters %v, %v", dls, err)
	}
	c := &calls{}
	request(t, ts.s, refund("acme", "refund-1"), c)
	request(t, ts.s, refund("acme", "refund-2"), c)
	hash := ts.effect("acme", "refund-1").ArgsHash()

	// serveCancelled runs the request on a context cancelled before it
	// starts and waits for the handler to return.
	serveCancelled := func(method, path, body string, header ...string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Host = "127.0.0.1"
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			ts.h.ServeHTTP(httptest.NewRecorder(), req.WithContext(cctx))
		}()
		select {
		case <-done:
		case <-time.After(time.Minute): // a safeguard only: the handler returns at once
			t.Fatalf("%s %s: the handler did not return after its request was cancelled", method, path)
		}
	}
	json := "application/json"
	actions := []struct {
		name, path, body string
		header           []string
		want             int
	}{
		{"dead-letter retry", "/v1/tenants/acme/dead-letters/" + dls[0].EventID + "/retry", "", with(bearer("acme"), "Idempotency-Key", "c-1"), 204},
		{"dead-letter discard", "/v1/tenants/acme/dead-letters/" + dls[1].EventID + "/discard", "", with(bearer("acme"), "Idempotency-Key", "c-2"), 200},
		{"quarantine retry", "/v1/quarantine/orders/q-2/retry", "", with(bearer("all"), "Idempotency-Key", "c-3"), 200},
		{"effect approve", "/v1/tenants/acme/effects/refund-1/approve", `{"args_hash":"` + hash + `","by":"ops"}`,
			with(bearer("acme"), "Content-Type", json, "Idempotency-Key", "c-4"), 200},
		{"effect reject", "/v1/tenants/acme/effects/refund-2/reject", `{"by":"ops","reason":"no"}`,
			with(bearer("acme"), "Content-Type", json, "Idempotency-Key", "c-5"), 200},
	}
	for _, a := range actions {
		serveCancelled("POST", a.path, a.body, a.header...)
	}
	serveCancelled("POST", "/v1/quarantine/orders/q-2/skip", "", with(bearer("all"), "Idempotency-Key", "c-6")...)
	serveCancelled("GET", "/v1/quarantine", "", bearer("all")...)
	serveCancelled("GET", "/v1/tenants/acme/effects", "", bearer("acme")...)
	serveCancelled("GET", "/v1/consumers", "", bearer("all")...)

	if got, err := outbox.For(ts.s).DeadLetters(ctx, "acme"); err != nil || len(got) != 2 {
		t.Errorf("after cancelled retry and discard, dead letters %v, %v", got, err)
	}
	open, err := projection.Quarantine(ts.s).Open(ctx, "orders")
	if err != nil || len(open) != 1 || !open[0].RetryRequestedAt.IsZero() {
		t.Errorf("after cancelled retry and skip, open entries %+v, %v", open, err)
	}
	for _, k := range []string{"refund-1", "refund-2"} {
		if st := ts.effect("acme", k).State; st != effect.AwaitingApproval {
			t.Errorf("after a cancelled decision, %s is %s", k, st)
		}
	}
	// No key was recorded: each request, repeated live with its key, acts.
	for _, a := range actions {
		r := ts.do("POST", a.path, []byte(a.body), a.header...)
		if r.status != a.want || r.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("%s repeated live: %d %s replayed=%q", a.name, r.status, r.body, r.header.Get("Idempotent-Replayed"))
		}
	}
	if open, _ := projection.Quarantine(ts.s).Open(ctx, "orders"); len(open) != 1 || open[0].RetryRequestedAt.IsZero() {
		t.Errorf("after the live retry, open entries %+v", open)
	}
}
