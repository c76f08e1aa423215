package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eventlite/eventlite/internal/inside"

	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// statsHold is a test hook in front of the handler: once armed, the next
// GET of path waits until released (or its client goes away), so a test
// controls when a poll's answer arrives.
type statsHold struct {
	mu    sync.Mutex
	path  string
	held  chan struct{} // closed when the request is waiting
	free  chan struct{} // close to let it go on
	done  chan struct{} // closed once it is answered
	armed bool
}

func (s *statsHold) arm(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.path, s.armed = path, true
	s.held, s.free, s.done = make(chan struct{}), make(chan struct{}), make(chan struct{})
}

func (s *statsHold) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		hit := s.armed && r.Method == http.MethodGet && r.URL.Path == s.path
		if hit {
			s.armed = false
		}
		held, free, done := s.held, s.free, s.done
		s.mu.Unlock()
		if !hit {
			h.ServeHTTP(w, r)
			return
		}
		close(held)
		select {
		case <-free:
		case <-r.Context().Done():
		}
		h.ServeHTTP(w, r)
		close(done)
	})
}

// tallBlank names the elements of main taller than 200 px with no text
// inside them within the window (text scrolled off to the side, say).
const tallBlank = `(() => {
  const texts = [];
  const w = document.createTreeWalker(document.getElementById('main'), NodeFilter.SHOW_TEXT);
  while (w.nextNode()) {
    if (!w.currentNode.textContent.trim()) continue;
    const r = document.createRange();
    r.selectNodeContents(w.currentNode);
    for (const q of r.getClientRects()) if (q.width > 0) texts.push(q);
  }
  const bad = [];
  for (const e of document.querySelectorAll('#main *')) {
    const b = e.getBoundingClientRect();
    if (b.height <= 200) continue;
    const left = Math.max(b.left, 0), right = Math.min(b.right, window.innerWidth);
    if (!texts.some((q) => q.left < right && q.right > left && q.top < b.bottom && q.bottom > b.top)) {
      bad.push(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + e.className : "") + " " + Math.round(b.height) + "px");
    }
  }
  return bad.join("; ");
})()`

// A * token's page: every link carries its tenant, so a dead letter of
// another tenant opens that tenant's event and stream (the switcher
// follows), addresses without a tenant open under the picked one, and a
// poll still in flight when the tenant changes never shows the previous
// tenant's numbers.
func TestBrowserTenantLinks(t *testing.T) {
	b := newBrowser(t)
	s, ctx := storetest.MustOpen(t, nil), context.Background()
	h, err := serve.New(s, &serve.Options{Tokens: []serve.Token{{Secret: "s3cret-all", Tenant: "*"}}})
	if err != nil {
		t.Fatal(err)
	}
	hold := &statsHold{}
	srv := httptest.NewServer(hold.wrap(h))
	t.Cleanup(func() { _ = h.Close(); srv.Close() })

	// Both tenants have a stream "order-001"; the dead letter is globex's.
	mustAppend(t, s, "acme", "order-001", event(t, "acme-order-001-1", "com.acme.order.placed", `{"who":"acme"}`, "", ""))
	mustAppend(t, s, "acme", "order-002", event(t, "acme-order-002-1", "com.acme.order.placed", `{"who":"acme"}`, "", ""))
	mustAppend(t, s, "globex", "order-001", event(t, "globex-order-001-1", "com.globex.order.placed", `{"who":"globex"}`, "", ""))
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, []outboxmark.Failure{{Position: 3, Error: "broker refused"}})
	}); err != nil {
		t.Fatal(err)
	}

	b.open(srv.URL + "/")
	b.do(chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), "s3cret-all"), chromedp.Click(chromedp.CSS("#login button")))
	b.wait("the tenant switcher", `document.querySelectorAll('#tenant option').length === 2`)
	b.hash("#/t/acme/consumers")
	b.wait("the dead letters under acme", `document.getElementById('tenant').value === "acme" && `+rows("#dead-letters")+` === 1`)

	// The event link opens globex's event, and the switcher says globex.
	b.do(chromedp.Click(chromedp.CSS(`#dead-letters a[href*="/event/"]`)))
	b.wait("globex's event", textOf("#event-attrs")+`.includes("globex-order-001-1")`)
	if got := evalJS[string](b, `document.getElementById('tenant').value`); got != "globex" {
		t.Fatalf("the switcher shows %q on globex's event", got)
	}
	if !evalJS[bool](b, textOf("#event-data")+`.includes("globex")`) {
		t.Fatalf("the event view shows another event: %s", b.mainText())
	}

	// The stream link opens globex's order-001, not acme's.
	b.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	b.wait("the dead letters again", rows("#dead-letters")+` === 1`)
	b.do(chromedp.Click(chromedp.CSS(`#dead-letters a[href*="/stream/"]`)))
	b.wait("globex's stream", rows("#stream-events")+` === 1`)
	if id := evalJS[string](b, `document.querySelector('#stream-events tbody tr').dataset.id`); id != "globex-order-001-1" {
		t.Fatalf("the stream link opened the stream holding %q", id)
	}
	if got := evalJS[string](b, `document.getElementById('tenant').value`); got != "globex" {
		t.Fatalf("the switcher shows %q on globex's stream", got)
	}

	// An old address (no tenant) opens under the picked tenant, and the
	// address then names it.
	b.do(chromedp.SetValue(chromedp.CSS("#tenant"), "acme"))
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('tenant').dispatchEvent(new Event('change'))`))
	b.wait("acme's overview", `location.hash === "#/t/acme/" && `+textOf("#ov-events")+` === "2"`)
	b.hash("#/stream/order-001")
	b.wait("acme's order-001", rows("#stream-events")+` === 1 && document.querySelector('#stream-events tbody tr').dataset.id === "acme-order-001-1"`)
	if h := evalJS[string](b, `location.hash`); h != "#/t/acme/stream/order-001" {
		t.Fatalf("the old address became %q", h)
	}

	// A poll in flight when the tenant changes: acme's /stats is held,
	// the switch to globex shows globex's counts, then acme's answer
	// arrives and must not show.
	hold.arm("/v1/tenants/acme/stats")
	b.hash("#/t/acme/")
	<-hold.held
	entries := `performance.getEntriesByName(location.origin + "/v1/tenants/acme/stats").length`
	before := evalJS[int](b, entries)
	b.do(chromedp.SetValue(chromedp.CSS("#tenant"), "globex"))
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('tenant').dispatchEvent(new Event('change'))`))
	b.wait("globex's counts", `location.hash === "#/t/globex/" && `+textOf("#ov-events")+` === "1"`)
	close(hold.free)
	<-hold.done
	b.wait("acme's held answer in the browser", entries+` > `+strconv.Itoa(before))
	// Let the page run what that answer triggers (its promise callbacks
	// run before these two timer turns end).
	b.do(chromedp.Evaluate[chromedp.Void](`new Promise((r) => setTimeout(() => setTimeout(r, 0), 0))`, chromedp.EvalAwaitPromise))
	if got := evalJS[string](b, textOf("#ov-events")); got != "1" {
		t.Fatalf("after switching to globex, the overview shows %q events (acme has 2, globex 1)", got)
	}
	if got := evalJS[string](b, textOf("h1")); !strings.Contains(got, "globex") {
		t.Fatalf("the overview's title %q", got)
	}
}

// The overview leads with what is wrong, each problem with its count and
// a link to where it is fixed; the quarantine view retries and skips an
// event and the consumers view discards a dead letter, each after a
// confirmation (checked through the store: serve runs no runner); a
// read-only token sees no buttons.
func TestBrowserCockpit(t *testing.T) {
	b := newBrowser(t)
	s, ctx := storetest.MustOpen(t, nil), context.Background()
	h, err := serve.New(s, &serve.Options{Tokens: []serve.Token{{Secret: "s3cret-all", Tenant: "*"}, {Secret: "s3cret-ro", Tenant: "*", ReadOnly: true},
		{Secret: "s3cret-acme", Tenant: "acme"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Close(); srv.Close() })

	mustAppend(t, s, "acme", "order-1", event(t, "acme-1", "com.acme.order.placed", `{}`, "", ""))
	mustAppend(t, s, "acme", "order-1", event(t, "acme-2", "com.acme.order.paid", `{"amount":"x"}`, "", ""))
	mustAppend(t, s, "acme", "order-2", event(t, "acme-3", "com.acme.order.placed", `{}`, "", ""))
	mustAppend(t, s, "globex", "order-1", event(t, "globex-1", "com.globex.order.placed", `{}`, "", ""))
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		if err := store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, []outboxmark.Failure{{Position: 3, Error: "refused"}, {Position: 4, Error: "refused"}}); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).SetCheckpoint(ctx, "orders", 1, nil); err != nil {
			return err
		}
		if err := store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, "orders", string(projection.StatusStopped),
			"quarantined event acme-2 at position 2: the handler orders.apply failed 3 times: amount \"x\" is not a number; fix the event's data or the handler, then retry or skip it"); err != nil {
			return err
		}
		return store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "orders", Reason: string(projection.ReasonHandlerError), Tenant: "acme", Subject: "order-1",
			Version: 2, Position: 2, EventID: "acme-2", Event: []byte(`{"type":"com.acme.order.paid"}`), Error: "amount is not a number", Attempts: 3})
	}); err != nil {
		t.Fatal(err)
	}

	c := &calls{}
	request(t, s, refund("acme", "refund-1"), c)
	request(t, s, refund("acme", "refund-2"), c)

	b.open(srv.URL + "/")
	b.do(chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), "s3cret-all"), chromedp.Click(chromedp.CSS("#login button")))
	b.hash("#/t/acme/")
	b.wait("the problems", `document.getElementById('problem-dead-letters') && document.getElementById('problem-stopped') && document.getElementById('problem-quarantined')`)
	for id, count := range map[string]string{"dead-letters": "2", "stopped": "1", "quarantined": "1", "effects": "2"} {
		if got := evalJS[string](b, textOf("#problem-"+id+" .count")); got != count {
			t.Fatalf("problem %s shows %q, want %q: %s", id, got, count, b.mainText())
		}
	}
	if !evalJS[bool](b, `!!(document.querySelector("#problems").compareDocumentPosition(document.querySelector("#ov-events")) & Node.DOCUMENT_POSITION_FOLLOWING)`) {
		t.Fatal("the counts come before the problems")
	}
	b.wait("the latest events", rows("#latest-events")+` === 3 && document.querySelector('#latest-events tbody tr').dataset.id === "acme-3"`)
	// Acme's events by type, most first, each linked to the tail of its type.
	b.wait("the counts by type", rows("#type-counts")+` === 2`)
	if got := evalJS[string](b, `[...document.querySelectorAll('#type-counts tbody tr')].map((r) => r.cells[0].textContent + "=" + r.cells[1].textContent + " " + r.querySelector("a").getAttribute("href")).join("; ")`); got !=
		"com.acme.order.placed=2 #/t/acme/tail?type=com.acme.order.placed; com.acme.order.paid=1 #/t/acme/tail?type=com.acme.order.paid" {
		t.Fatalf("counts by type: %s", got)
	}
	b.screenshot("overview-problems")

	// The links: dead letters and the stopped projection to consumers,
	// the quarantined event to the quarantine view.
	b.do(chromedp.Click(chromedp.CSS("#problem-dead-letters a")))
	b.wait("the dead letters", rows("#dead-letters")+` === 2`)
	b.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	b.wait("the overview", `document.getElementById('problem-stopped')`)
	b.do(chromedp.Click(chromedp.CSS("#problem-stopped a")))
	b.wait("the stopped projection", rows("#projections")+` === 1 && `+textOf("#projections")+`.includes("stopped")`)
	b.wait("the event it stopped on", `document.querySelector('#projections td.held a[href="#/t/acme/event/acme-2"]')`)
	// Number headers sit over their numbers; times are local, UTC on hover.
	if !evalJS[bool](b, `[...document.querySelectorAll('#dead-letters th')].filter((th) => th.textContent === "version")[0].classList.contains("num") && `+
		`/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/.test(document.querySelector('#dead-letters time').textContent) && `+
		`document.querySelector('#dead-letters time').title.endsWith("(UTC)")`) {
		t.Fatalf("headers or times: %s", b.mainText())
	}
	b.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	b.wait("the overview", `document.getElementById('problem-quarantined')`)
	b.do(chromedp.Click(chromedp.CSS("#problem-quarantined a")))
	b.wait("the quarantine", rows("#quarantine")+` === 1 && `+textOf("#quarantine")+`.includes("amount is not a number")`)

	// Retry, confirmed: the entry is marked for a retry.
	b.do(chromedp.Click(chromedp.CSS(`#quarantine button[data-action="retry"]`)))
	b.wait("the question", `document.querySelector('#quarantine button.confirm')`)
	if rs, _ := projection.Quarantine(s).Retries(ctx, "orders"); len(rs) != 0 {
		t.Fatal("retried before the confirmation")
	}
	b.do(chromedp.Click(chromedp.CSS("#quarantine button.confirm")))
	b.wait("the retry shown", textOf("#quarantine tbody tr")+`.includes("requested")`)
	if rs, err := projection.Quarantine(s).Retries(ctx, "orders"); err != nil || len(rs) != 1 || rs[0].EventID != "acme-2" {
		t.Fatalf("marked for retry: %v, %v", rs, err)
	}
	b.screenshot("quarantine")

	// Skip, cancelled then confirmed: resolved, the projection moves on.
	b.do(chromedp.Click(chromedp.CSS(`#quarantine button[data-action="skip"]`)))
	b.do(chromedp.Click(chromedp.CSS("#quarantine button.cancel")))
	b.wait("the skip button again", `document.querySelector('#quarantine button[data-action="skip"]')`)
	b.do(chromedp.Click(chromedp.CSS(`#quarantine button[data-action="skip"]`)))
	b.do(chromedp.Click(chromedp.CSS("#quarantine button.confirm")))
	b.wait("no quarantined events", textOf("main")+`.includes("No quarantined events.")`)
	if open, err := projection.Quarantine(s).Open(ctx, "orders"); err != nil || len(open) != 0 {
		t.Fatalf("open after skip: %v, %v", open, err)
	}
	if cp, err := projection.Records(s).Checkpoint(ctx, "orders"); err != nil || cp != 2 {
		t.Fatalf("checkpoint after skip %d, %v; want 2", cp, err)
	}

	// Discard a dead letter, confirmed.
	b.hash("#/t/acme/consumers")
	b.wait("the dead letters", rows("#dead-letters")+` === 2`)
	b.do(chromedp.Click(chromedp.CSS(`#dead-letters tr:first-child button[data-action="discard"]`)))
	b.do(chromedp.Click(chromedp.CSS("#dead-letters button.confirm")))
	b.wait("one dead letter left", rows("#dead-letters")+` === 1`)
	dls, err := outbox.For(s).DeadLetters(ctx, "")
	if err != nil || len(dls) != 1 || dls[0].EventID != "globex-1" {
		t.Fatalf("dead letters after discard: %v, %v", dls, err)
	}

	// Health: doctor's findings link to where they are fixed, and their
	// ids to their events, in their tenants.
	b.hash("#/t/acme/")
	b.wait("doctor's findings among the problems", `document.querySelector('#problem-doctor a[href="#/t/acme/health"]')`)
	b.do(chromedp.Click(chromedp.CSS("#problem-doctor a")))
	b.wait("the findings", `document.querySelector('#findings tr[data-kind="dead_letters"]')`)
	if h := evalJS[string](b, `document.querySelector('#findings tr[data-kind="dead_letters"] a.fix').getAttribute('href')`); h != "#/t/acme/consumers" {
		t.Fatalf("the dead letters' finding links to %q", h)
	}
	b.screenshot("health")
	b.do(chromedp.Click(chromedp.CSS(`#findings tr[data-kind="dead_letters"] td.ids a`)))
	b.wait("globex's dead event", textOf("#event-attrs")+`.includes("globex-1") && document.getElementById('tenant').value === "globex"`)

	// Effects awaiting approval: approve one, reject the other.
	b.hash("#/t/acme/")
	b.wait("the effects problem", `document.getElementById('problem-effects')`)
	b.do(chromedp.Click(chromedp.CSS("#problem-effects a")))
	b.wait("the effects", rows("#effects")+` === 2`)
	b.screenshot("effects")
	b.do(chromedp.Click(chromedp.CSS(`#effects tr[data-key="refund-1"] button[data-action="approve"]`)))
	b.do(chromedp.Click(chromedp.CSS(`#effects tr[data-key="refund-1"] button.confirm`)))
	b.wait("one effect left", rows("#effects")+` === 1`)
	b.do(chromedp.Click(chromedp.CSS(`#effects tr[data-key="refund-2"] button[data-action="reject"]`)))
	b.do(chromedp.Click(chromedp.CSS(`#effects tr[data-key="refund-2"] button.confirm`)))
	b.wait("no effect left", textOf("main")+`.includes("No effect awaits approval.")`)
	for key, want := range map[string]effect.State{"refund-1": effect.Approved, "refund-2": effect.Rejected} {
		if e := (&testServer{t: t, s: s}).effect("acme", key); e.State != want || e.DecidedBy != "web page" {
			t.Fatalf("effect %s: %s by %q, want %s by the web page", key, e.State, e.DecidedBy, want)
		}
	}
	if got := c.got(); len(got) != 0 {
		t.Fatalf("the page ran an effect: %v", got)
	}

	// The append form asks for a version only when one is expected.
	b.hash("#/t/acme/append")
	b.wait("the form", `document.getElementById('ap-expected')`)
	if !evalJS[bool](b, `document.getElementById('ap-version-field').hidden && document.getElementById('ap-version').offsetParent === null`) {
		t.Fatal(`the version field shows with "any version"`)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#ap-expected"), "version"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('ap-expected').dispatchEvent(new Event('change'))`))
	b.wait("the version field", `document.getElementById('ap-version').offsetParent !== null`)

	// A read-only token: the lists, no buttons.
	b.do(chromedp.Click(chromedp.CSS("#logout")))
	b.wait("the sign-in page without navigation", `document.getElementById('token') && document.getElementById('nav').hidden`)
	b.do(chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), "s3cret-ro"), chromedp.Click(chromedp.CSS("#login button")))
	b.hash("#/t/acme/consumers")
	b.wait("the dead letters, read-only", rows("#dead-letters")+` === 1`)
	if n := evalJS[int](b, `document.querySelectorAll('main button').length`); n != 0 {
		t.Fatalf("a read-only token sees %d buttons", n)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "orders", Reason: string(projection.ReasonHandlerError), Tenant: "acme", Subject: "order-2",
			Version: 1, Position: 3, EventID: "acme-3", Event: []byte(`{}`), Error: "again", Attempts: 1})
	}); err != nil {
		t.Fatal(err)
	}
	b.hash("#/t/acme/quarantine")
	b.wait("the quarantine, read-only", rows("#quarantine")+` === 1`)
	if n := evalJS[int](b, `document.querySelectorAll('main button').length`); n != 0 {
		t.Fatalf("a read-only token sees %d buttons", n)
	}

	// A narrow window, every view: nothing wider than the window, and no
	// element taller than 200 px without visible text in it.
	b.do(chromedp.EmulateViewport(390, 844))
	for _, v := range []struct{ view, ready string }{
		{"#/t/acme/", `document.getElementById('problem-quarantined')`},
		{"#/t/acme/streams", rows("#streams-table") + ` === 2`},
		{"#/t/acme/stream/order-1", rows("#stream-events") + ` === 2`},
		{"#/t/acme/event/acme-2", textOf("#event-data") + `.includes("amount")`},
		{"#/t/acme/tail", textOf("#tail-status") + ` === "live"`},
		{"#/t/acme/append", `document.getElementById('ap-submit')`},
		{"#/t/acme/consumers", rows("#dead-letters") + ` === 1 && ` + rows("#projections") + ` === 1`},
		{"#/t/acme/quarantine", rows("#quarantine") + ` === 1`},
		{"#/t/acme/effects", textOf("main") + `.includes("No effect awaits approval.")`},
		{"#/t/acme/health", `document.getElementById('findings')`},
	} {
		b.hash(v.view)
		b.wait(v.view, v.ready)
		if !evalJS[bool](b, `document.documentElement.scrollWidth <= window.innerWidth`) {
			t.Fatalf("%s overflows a narrow window: %v > %v", v.view, evalJS[int](b, `document.documentElement.scrollWidth`), evalJS[int](b, `window.innerWidth`))
		}
		if blank := evalJS[string](b, tallBlank); blank != "" {
			t.Fatalf("%s at 390 px: elements taller than 200 px show no text: %s", v.view, blank)
		}
	}

	// A tenant's token: its overview shows its own tenant's problems
	// (acme's quarantined event; globex's dead letter is not acme's).
	b.do(chromedp.EmulateViewport(1280, 900))
	b.hash("#/t/acme/")
	b.wait("signed in", `!document.getElementById('logout').hidden`)
	b.do(chromedp.Click(chromedp.CSS("#logout")))
	b.do(chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), "s3cret-acme"), chromedp.Click(chromedp.CSS("#login button")))
	b.hash("#/t/acme/")
	b.wait("acme's problems", textOf("#problem-quarantined .count")+` === "1"`)
	if evalJS[bool](b, `!!document.getElementById('problem-dead-letters')`) {
		t.Fatalf("acme's token sees dead letters: %s", b.mainText())
	}
	b.hash("#/t/acme/quarantine")
	b.wait("acme's quarantine, no buttons", rows("#quarantine")+` === 1 && document.querySelectorAll('main button').length === 0`)
}

// One stream in pages of 50: oldest first and newest first, paging both
// ways, a jump to a version, the type filter, rows that expand to their
// data, new rows marked on the live last page, and a "new events" marker
// newest first.
func TestBrowserStreamPaging(t *testing.T) {
	b := newBrowser(t)
	s, ctx := storetest.MustOpen(t, nil), context.Background()
	h, err := serve.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Close(); srv.Close() })
	mustAppend(t, s, "acme", "old-1", event(t, "old-1", "com.t.old", `{}`, "", ""))
	if err := s.Update(ctx, func(tx *store.Tx) error {
		for i := 1; i <= 120; i++ {
			typ := "com.t.even"
			if i%2 == 1 {
				typ = "com.t.odd"
			}
			if _, err := tx.Append(ctx, "acme", "big", store.Any, event(t, "big-"+strconv.Itoa(i), typ, `{"n":`+strconv.Itoa(i)+`}`, "", "")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	versions := `[...document.querySelectorAll('#stream-events tbody tr:not([hidden]) td:first-child')].map((td) => td.textContent)`
	firstLast := func() string {
		return evalJS[string](b, `(() => { const v = `+versions+`; return v[0] + ".." + v[v.length - 1] + "/" + v.length; })()`)
	}
	waitPage := func(what, want string) {
		t.Helper()
		b.wait(what, `(() => { const v = `+versions+`; return v.length && v[0] + ".." + v[v.length - 1] + "/" + v.length === `+strconv.Quote(want)+`; })()`)
	}

	b.open(srv.URL + "/#/t/acme/stream/big")
	waitPage("the first page", "1..50/50")
	if evalJS[bool](b, `!!document.getElementById('page-older')`) {
		t.Fatal("the first page links to an older one")
	}
	b.do(chromedp.Click(chromedp.CSS("#page-newer")))
	waitPage("the second page", "51..100/50")
	b.do(chromedp.Click(chromedp.CSS("#page-newer")))
	waitPage("the last page", "101..120/20")
	b.wait("live on the last page", textOf("#stream-status")+` === "live"`)
	mustAppend(t, s, "acme", "big", event(t, "big-121", "com.t.odd", `{"n":121}`, "", ""))
	b.wait("the new row, marked", `document.querySelector('#stream-events tr.new td') && document.querySelector('#stream-events tr.new td').textContent === "121" && `+textOf("#new-marker")+`.includes("1 new")`)
	b.do(chromedp.Click(chromedp.CSS("#page-older")))
	waitPage("back a page", "51..100/50")

	b.do(chromedp.Click(chromedp.CSS("#order-newest")))
	waitPage("newest first", "121..72/50")
	b.do(chromedp.Click(chromedp.CSS("#page-older")))
	waitPage("older, newest first", "71..22/50")
	b.do(chromedp.Click(chromedp.CSS("#page-newer")))
	waitPage("newer again", "121..72/50")

	// Newest first, a new event is counted, not inserted.
	b.wait("listening", `document.getElementById('new-marker').hidden`)
	mustAppend(t, s, "acme", "big", event(t, "big-122", "com.t.even", `{"n":122}`, "", ""))
	b.wait("the marker", `!document.getElementById('new-marker').hidden && `+textOf("#new-marker")+`.includes("1 new event")`)
	if got := firstLast(); got != "121..72/50" {
		t.Fatalf("newest first, a new event changed the page to %s", got)
	}
	b.do(chromedp.Click(chromedp.CSS("#new-marker")))
	waitPage("the newest page", "122..73/50")

	// Jump to a version, both orders.
	b.do(chromedp.SetValue(chromedp.CSS("#jump"), "30"), chromedp.Click(chromedp.CSS("#jump-form button")))
	waitPage("newest first from 30", "30..1/30")
	b.do(chromedp.Click(chromedp.CSS("#order-oldest")))
	// The order's page is drawn anew, jump form included: wait for it
	// before using the form, or the nodes found may be replaced under
	// the click (seen under -race).
	b.wait("oldest first", `(() => { const v = `+versions+`; return v.length > 1 && Number(v[0]) < Number(v[v.length - 1]); })()`)
	b.do(chromedp.SetValue(chromedp.CSS("#jump"), "100"), chromedp.Click(chromedp.CSS("#jump-form button")))
	waitPage("oldest first from 100", "100..122/23")

	// The type filter, and a row's data expanded.
	b.do(chromedp.SetValue(chromedp.CSS("#stream-type"), "com.t.odd"), chromedp.SetValue(chromedp.CSS("#jump"), "1"), chromedp.Click(chromedp.CSS("#jump-form button")))
	waitPage("odd types only", "1..49/25")
	b.do(chromedp.Click(chromedp.CSS(`#stream-events tr[data-id="big-3"] td.data`)))
	if d := evalJS[string](b, textOf(`#stream-events tr[data-id="big-3"] td.data`)); d != "{\n  \"n\": 3\n}" {
		t.Fatalf("expanded data %q", d)
	}
	b.screenshot("stream-paging")

	// Recently updated streams are the last distinct ones, however busy
	// the newest: 300 appends to one stream hide neither big nor old-1.
	if err := s.Update(ctx, func(tx *store.Tx) error {
		for i := range 300 {
			if _, err := tx.Append(ctx, "acme", "hot", store.Any, event(t, "hot-"+strconv.Itoa(i), "com.t.hot", `{}`, "", "")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.hash("#/t/acme/streams")
	b.wait("the recently updated", rows("#recent-table")+` > 0`)
	if got := evalJS[string](b, `[...document.querySelectorAll('#recent-table tbody tr td:first-child')].map((td) => td.textContent).join(",")`); got != "hot,big,old-1" {
		t.Fatalf("recently updated %q, want hot,big,old-1", got)
	}
}
