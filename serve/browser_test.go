package serve_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// The web page is tested in a real browser: Debian's chromium, driven over
// the DevTools protocol by chromedp (pure Go, no driver binary, waits on
// DOM conditions). Without chromium the test skips and says why, unless
// EVENTLITE_REQUIRE_BROWSER is set (CI sets it): then it fails.

var updateScreenshots = flag.Bool("update-screenshots", false, "write the browser test's screenshots to docs/screenshots")

// browserPath finds chromium, or skips (fails under
// EVENTLITE_REQUIRE_BROWSER).
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium installed (looked for /usr/bin/chromium, chromium, chromium-browser, google-chrome in PATH): " +
		"apt-get install chromium to run the web page's browser test"
	if os.Getenv("EVENTLITE_REQUIRE_BROWSER") != "" {
		t.Fatal(msg + "; EVENTLITE_REQUIRE_BROWSER is set, so this fails rather than skips")
	}
	t.Log(msg)
	t.Skip(msg)
	return ""
}

// tab is one browser tab under test.
type tab struct {
	t   *testing.T
	ctx context.Context
}

// newBrowser starts a headless chromium with a fresh profile and returns
// its first tab.
func newBrowser(t *testing.T) tab {
	t.Helper()
	path := browserPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	b := tab{t: t, ctx: bctx}
	b.do(chromedp.EmulateViewport(1280, 900))
	return b
}

// newTab opens another tab of the same browser (same cookies).
func (b tab) newTab() tab {
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	nt := tab{t: b.t, ctx: ctx}
	nt.do(chromedp.EmulateViewport(1280, 900))
	return nt
}

func (b tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v\npage: %s", err, b.mainText())
	}
}

// mainText is the page's main text, for failure messages.
func (b tab) mainText() string {
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.getElementById('main') || document.body || {innerText: ''}).innerText`))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// wait polls a JavaScript condition until it holds.
func (b tab) wait(what, cond string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](`!!(`+cond+`)`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		b.t.Fatalf("waiting for %s (%s): %v\npage: %s", what, cond, err, b.mainText())
	}
}

func evalJS[T any](b tab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b tab) open(url string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url))
}

// hash moves the page to a view without a reload.
func (b tab) hash(h string) {
	b.t.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](`location.hash = ` + strconv.Quote(h)))
}

// text is the text of the element sel, "" when absent.
func textOf(sel string) string {
	return `((document.querySelector(` + strconv.Quote(sel) + `) || {}).textContent || "")`
}

func rows(sel string) string {
	return `document.querySelectorAll(` + strconv.Quote(sel+" tbody tr") + `).length`
}

// screenshot captures the viewport: always checked to be a PNG, written to
// docs/screenshots with -update-screenshots.
func (b tab) screenshot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if *updateScreenshots {
		dir := filepath.Join("..", "docs", "screenshots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
}

// hostileData is event data that would run script or add elements if the
// page ever parsed event data as HTML.
const hostileData = `{"note":"<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"><b id=\"injected\">bold</b><iframe id=\"injected-frame\"></iframe>"}`

// noInjection holds when nothing of hostileData became an element or ran.
const noInjection = `window.__pwned === undefined && !document.getElementById('injected') && !document.getElementById('injected-frame') && ` +
	`document.querySelectorAll('main script, main img, main iframe, main b').length === 0`

type retryCall struct {
	cookie bool
	site   string
	status int
	body   string
}

func mustAppend(t *testing.T, s *store.Store, tenant, stream string, es ...envelope.Event) {
	t.Helper()
	if _, err := s.Append(context.Background(), tenant, stream, store.Any, es...); err != nil {
		t.Fatal(err)
	}
}

func event(t *testing.T, id, typ, data, corr, cause string) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.ID, e.Source, e.CorrelationID, e.CausationID = id, "/shop", corr, cause
	e.DataContentType, e.Data = "application/json", []byte(data)
	return e
}

// The page in a real browser: sign in with a token, switch tenant, append
// through the form and see the event in the live tail and the stream view
// without a reload, pause and resume, open an event and follow its
// correlation and cause links, list streams with paging, retry a dead
// letter, read doctor, show hostile event data as text, fit a narrow
// window, and refuse a cross-site form post made with the session cookie.
func TestBrowser(t *testing.T) {
	b := newBrowser(t)
	s, ctx := storetest.MustOpen(t, nil), context.Background()
	h, err := serve.New(s, &serve.Options{Tokens: []serve.Token{{Secret: "s3cret-all", Tenant: "*"}, {Secret: "s3cret-shop", Tenant: "shop"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Requests to retry a dead letter are recorded: the cross-site one
	// below must carry the cookie and be refused for being cross-site.
	retries := make(chan retryCall, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/retry") {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		_, cookieErr := r.Cookie(serve.SessionCookie)
		retries <- retryCall{cookie: cookieErr == nil, site: r.Header.Get("Sec-Fetch-Site"), status: rec.Code, body: rec.Body.String()}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(func() { _ = h.Close(); srv.Close() })
	ts := &testServer{t: t, s: s, h: h, url: srv.URL}

	mustAppend(t, s, "shop", "order-1", event(t, "placed-1", "com.shop.order.placed", `{"order":1,"items":[{"sku":"A-1","qty":2}]}`, "corr-1", ""))
	mustAppend(t, s, "shop", "order-1", event(t, "paid-1", "com.shop.order.paid", `{"order":1,"amount":"12.50"}`, "corr-1", "placed-1"))
	mustAppend(t, s, "shop", "invoice-1", event(t, "invoiced-1", "com.shop.invoice.issued", `{"order":1}`, "corr-1", "paid-1"))
	mustAppend(t, s, "shop", "order-evil", event(t, "evil-1", "com.shop.note.added", hostileData, "", ""))
	mustAppend(t, s, "other", "thing-1", event(t, "other-1", "com.other.thing", `{}`, "", ""))
	if err := s.Update(ctx, func(tx *store.Tx) error { // 55 more streams: two pages of 50
		for i := range 55 {
			if _, err := tx.Append(ctx, "shop", fmt.Sprintf("item-%02d", i), store.Any, event(t, fmt.Sprintf("item-%d", i), "com.shop.item.listed", `{}`, "", "")); err != nil {
				return err
			}
		}
		return store.Bookkeeping(inside.Key{}, tx).SetProjectionStatus(ctx, "order-summary", string(projection.StatusStopped), "quarantined event paid-1 at position 2: amount is not a number")
	}); err != nil {
		t.Fatal(err)
	}
	l, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).DeadLetter(ctx, l, []outboxmark.Failure{{Position: 3, Error: "broker refused: <b>no</b>"}})
	}); err != nil {
		t.Fatal(err)
	}

	// Sign in: the token is exchanged for an HttpOnly cookie, never put in
	// a URL, and not readable by the page's script.
	b.open(ts.url + "/")
	b.do(chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), "s3cret-all"), chromedp.Click(chromedp.CSS("#login button")))
	b.wait("the overview", textOf("#ov-events")+` !== "…" && `+textOf("#ov-events")+` !== ""`)
	if c := evalJS[string](b, `document.cookie`); c != "" {
		t.Fatalf("the page's script reads a cookie: %q", c)
	}
	if u := evalJS[string](b, `location.href`); strings.Contains(u, "s3cret") {
		t.Fatalf("the token is in the URL %s", u)
	}

	// The tenant switcher: a * token sees both tenants.
	b.wait("the tenant switcher", `!document.getElementById('tenant-box').hidden && document.querySelectorAll('#tenant option').length === 2`)
	b.do(chromedp.SetValue(chromedp.CSS("#tenant"), "shop"))
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('tenant').dispatchEvent(new Event('change'))`))
	b.wait("shop's counts", textOf("#ov-events")+` === "59" && `+textOf("#ov-streams")+` === "58"`)
	b.wait("the store's sizes", textOf("#ov-file")+`.includes("iB")`)
	b.screenshot("overview")

	// The streams: the first page of 50 with a next page, the prefix
	// filter, the recently updated.
	b.hash("#/streams")
	b.wait("the first page", rows("#streams-table")+` === 50 && document.getElementById('next-page')`)
	b.wait("the recently updated streams", rows("#recent-table")+` > 0 && `+textOf("#recent-table tbody tr")+`.includes("item-54")`)
	b.do(chromedp.Click(chromedp.CSS("#next-page")))
	b.wait("the second page", rows("#streams-table")+` === 8 && !document.getElementById('next-page')`)
	b.do(chromedp.SetValue(chromedp.CSS("#prefix"), "order-"), chromedp.Click(chromedp.CSS("#streams-form button")))
	b.wait("the filtered streams", rows("#streams-table")+` === 2 && `+textOf("#streams-table")+`.includes("order-evil")`)
	b.screenshot("streams")

	// Three tabs: the live tail, the stream view, the append form.
	tail := b.newTab()
	tail.open(ts.url + "/#/tail")
	tail.wait("the tail to be live", textOf("#tail-status")+` === "live" && `+rows("#tail-events")+` === 20`)
	stream := b.newTab()
	stream.open(ts.url + "/#/stream/order-1")
	stream.wait("the stream's events", rows("#stream-events")+` === 2 && `+textOf("#stream-status")+` === "live"`)
	if d := evalJS[string](stream, textOf(".direction")); !strings.Contains(d, "Oldest first") {
		t.Fatalf("direction label %q", d)
	}

	form := b.newTab()
	form.open(ts.url + "/#/append?stream=order-1")
	form.do(chromedp.WaitVisible(chromedp.CSS("#ap-type")),
		chromedp.SendKeys(chromedp.CSS("#ap-type"), "com.shop.order.shipped"),
		chromedp.SetValue(chromedp.CSS("#ap-data"), `{"carrier":"ups"}`),
		chromedp.SetValue(chromedp.CSS("#ap-expected"), "version"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('ap-expected').dispatchEvent(new Event('change'))`),
		chromedp.SendKeys(chromedp.CSS("#ap-version"), "2"),
		chromedp.SendKeys(chromedp.CSS("#ap-key"), "ship-order-1"),
		chromedp.Click(chromedp.CSS("#ap-submit")))
	form.wait("the append's answer", `document.getElementById('ap-out').dataset.status === "201"`)
	req, res, curl := evalJS[string](form, textOf("#ap-request")), evalJS[string](form, textOf("#ap-response")), evalJS[string](form, textOf("#ap-curl"))
	for _, want := range []string{"POST /v1/tenants/shop/streams/order-1/events", `If-Match: "2"`, "Idempotency-Key: ship-order-1", "ce-type: com.shop.order.shipped", `{"carrier":"ups"}`} {
		if !strings.Contains(req, want) {
			t.Fatalf("raw request lacks %q:\n%s", want, req)
		}
	}
	if !strings.HasPrefix(res, "201") || !strings.Contains(res, `etag: "3"`) || !strings.Contains(res, `"version":3`) {
		t.Fatalf("raw response:\n%s", res)
	}
	if !strings.Contains(curl, "curl -i -X POST '"+ts.url+"/v1/tenants/shop/streams/order-1/events'") || !strings.Contains(curl, `-H 'If-Match: "2"'`) ||
		!strings.Contains(curl, "$EVENTLITE_TOKEN") || strings.Contains(curl, "s3cret") {
		t.Fatalf("curl command:\n%s", curl)
	}
	form.screenshot("append")
	evs := ts.events("shop", "order-1")
	if len(evs) != 3 || evs[2].Type != "com.shop.order.shipped" || string(evs[2].Data) != `{"carrier":"ups"}` {
		t.Fatalf("stored: %+v", evs)
	}
	// Without a reload, both tabs show it.
	tail.wait("the form's event in the tail", textOf("#tail-events tbody tr")+`.includes("com.shop.order.shipped")`)
	stream.wait("the form's event in the stream", rows("#stream-events")+` === 3 && `+textOf("#stream-events tbody tr:last-child")+`.includes("com.shop.order.shipped")`)

	// An append by another writer during the test reaches both too.
	mustAppend(t, s, "shop", "order-1", event(t, "delivered-1", "com.shop.order.delivered", `{}`, "corr-1", ""))
	tail.wait("the other writer's event in the tail", textOf("#tail-events tbody tr")+`.includes("com.shop.order.delivered")`)
	stream.wait("the other writer's event in the stream", rows("#stream-events")+` === 4`)

	// A dropped connection: the tail and the stream view reconnect on
	// their own (EventSource sends Last-Event-ID) and resume after the
	// last event they showed, with no gap and no duplicate.
	srv.CloseClientConnections()
	mustAppend(t, s, "shop", "order-1", event(t, "noted-1", "com.shop.order.noted", `{}`, "", ""))
	tail.wait("the event appended while disconnected", textOf("#tail-events tbody tr")+`.includes("com.shop.order.noted")`)
	stream.wait("the event appended while disconnected", rows("#stream-events")+` === 5`)
	if dup := evalJS[string](tail, `(() => { const ps = [...document.querySelectorAll('#tail-events tbody tr td:first-child')].map(td => td.textContent);
		return ps.filter((p, i) => ps.indexOf(p) !== i).join(","); })()`); dup != "" {
		t.Fatalf("the tail shows positions %s twice after reconnecting", dup)
	}
	if v := evalJS[string](stream, `[...document.querySelectorAll('#stream-events tr td:first-child')].map(td => td.textContent).join(",")`); v != "1,2,3,4,5" {
		t.Fatalf("versions after reconnecting %q, want 1,2,3,4,5", v)
	}
	tail.screenshot("tail")

	// Pause: nothing arrives; resume: what was missed, once.
	stream.do(chromedp.Click(chromedp.CSS("#pause")))
	stream.wait("paused", textOf("#stream-status")+` === "paused"`)
	mustAppend(t, s, "shop", "order-1", event(t, "returned-1", "com.shop.order.returned", `{}`, "", ""))
	// The live tail got it: a view that was still connected would have too.
	tail.wait("the event appended while paused, in the tail", textOf("#tail-events tbody tr")+`.includes("com.shop.order.returned")`)
	if n := evalJS[int](stream, rows("#stream-events")); n != 5 {
		t.Fatalf("a paused view shows %d events", n)
	}
	stream.do(chromedp.Click(chromedp.CSS("#pause")))
	stream.wait("the missed event after resume", rows("#stream-events")+` === 6 && `+textOf("#stream-status")+` === "live"`)
	if v := evalJS[string](stream, `[...document.querySelectorAll('#stream-events tr td:first-child')].map(td => td.textContent).join(",")`); v != "1,2,3,4,5,6" {
		t.Fatalf("versions after resume %q, want 1,2,3,4,5,6", v)
	}
	stream.screenshot("stream")

	// The tail's filters: type, and stream prefix.
	tail.hash("#/tail?type=com.shop.order.placed")
	tail.wait("the type filter", textOf("#tail-status")+` === "live" && `+rows("#tail-events")+` === 1`)
	tail.hash("#/tail?stream_prefix=invoice-")
	tail.wait("the stream filter", textOf("#tail-status")+` === "live" && `+rows("#tail-events")+` === 1 && `+textOf("#tail-events")+`.includes("invoiced-1")`)
	mustAppend(t, s, "shop", "order-2", event(t, "placed-2", "com.shop.order.placed", `{}`, "", ""))
	mustAppend(t, s, "shop", "invoice-2", event(t, "invoiced-2", "com.shop.invoice.issued", `{}`, "", ""))
	tail.wait("a live event through the filter", rows("#tail-events")+` === 2 && `+textOf("#tail-events tbody tr")+`.includes("invoiced-2")`)

	// One event, its correlation and its cause.
	stream.do(chromedp.Click(chromedp.CSS(`#stream-events tr[data-id="paid-1"] td a[href*="/event/"]`)))
	stream.wait("the event view", textOf("#event-attrs")+`.includes("causationid")`)
	if d := evalJS[string](stream, textOf("#event-data")); d != "{\n  \"order\": 1,\n  \"amount\": \"12.50\"\n}" {
		t.Fatalf("data not pretty-printed: %q", d)
	}
	for _, want := range []string{"specversion", "1.0", "/shop", "streamversion", "position", "tenant", "correlationid", "corr-1"} {
		if !strings.Contains(evalJS[string](stream, textOf("#event-attrs")), want) {
			t.Fatalf("attributes lack %q", want)
		}
	}
	stream.screenshot("event")
	stream.do(chromedp.Click(chromedp.CSS("#cause-link")))
	stream.wait("the cause", textOf("h1")+`.includes("placed-1")`)
	stream.do(chromedp.Click(chromedp.CSS("#correlation-link")))
	stream.wait("the correlation", rows("#correlation-table")+` === 4`)
	if got := evalJS[string](stream, `[...document.querySelectorAll('#correlation-table tbody tr')].map(r => r.dataset.id).join(",")`); got != "placed-1,paid-1,invoiced-1,delivered-1" {
		t.Fatalf("correlated events %q", got)
	}

	// Hostile data is text in every view that shows it.
	for _, view := range []string{"#/event/evil-1", "#/stream/order-evil", "#/tail?stream_prefix=order-evil"} {
		stream.hash(view)
		if view == "#/event/evil-1" {
			stream.wait("the hostile event", textOf("#event-data")+`.includes("<script>window.__pwned=1</script>")`)
		}
		if view == "#/stream/order-evil" {
			stream.wait("the hostile stream", rows("#stream-events")+` === 1 && `+textOf("#stream-events")+`.includes("<img src=x")`)
		}
		if view == "#/tail?stream_prefix=order-evil" {
			stream.wait("the tail", textOf("#tail-status")+` === "live" && `+textOf("#tail-events")+`.includes("onerror")`)
		}
		if !evalJS[bool](stream, noInjection) {
			t.Fatalf("%s: hostile event data became HTML or ran", view)
		}
	}

	// A cross-site request with the session cookie: another port of the
	// same host is same-site, so the Strict cookie goes along. It asks to
	// retry the dead letter (a POST without a body, which a form or a
	// no-cors fetch can send); the server refuses it by Sec-Fetch-Site.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>evil</title><script>
fetch(%q, {method: "POST", mode: "no-cors", credentials: "include"}).finally(() => { document.title = "sent"; });
</script>`, ts.url+"/v1/tenants/shop/dead-letters/invoiced-1/retry")
	}))
	defer evil.Close()
	b.open(evil.URL)
	b.wait("the cross-site request", `document.title === "sent"`)
	select {
	case c := <-retries:
		if !c.cookie || c.site != "same-site" || c.status != 403 || !strings.Contains(c.body, "#cross-site") {
			t.Fatalf("the cross-site retry: %+v", c)
		}
	default:
		t.Fatal("the cross-site request did not reach the server")
	}
	if dls, err := outbox.For(s).DeadLetters(ctx, "shop"); err != nil || len(dls) != 1 {
		t.Fatalf("dead letters after a cross-site retry: %v, %v", dls, err)
	}
	b.open(ts.url + "/#/")
	b.wait("the page again", `/^[0-9]+$/.test(`+textOf("#ov-events")+`)`)

	// Consumers: the stopped projection with its quarantined event, the
	// relay's backlog, the dead letter and its retry.
	b.hash("#/consumers")
	b.wait("the consumers", rows("#projections")+` === 1 && `+textOf("#projections")+`.includes("quarantined event paid-1") && `+rows("#dead-letters")+` === 1`)
	if !evalJS[bool](b, textOf("#dead-letters")+`.includes("broker refused: <b>no</b>")`) || !evalJS[bool](b, noInjection) {
		t.Fatal("the dead letter's error is not shown as text")
	}
	b.screenshot("consumers")
	b.do(chromedp.Click(chromedp.CSS(`#dead-letters button[data-action="retry"]`)))
	b.do(chromedp.Click(chromedp.CSS("#dead-letters button.confirm")))
	if c := <-retries; !c.cookie || c.site != "same-origin" || c.status != 204 {
		t.Fatalf("the page's retry: %+v", c)
	}
	b.wait("the retried dead letter gone", `!document.getElementById('dead-letters') && `+textOf("main")+`.includes("No dead letters.")`)
	if dls, err := outbox.For(s).DeadLetters(ctx, "shop"); err != nil || len(dls) != 0 {
		t.Fatalf("dead letters after retry: %v, %v", dls, err)
	}

	// Health: doctor's verdict and the links.
	b.hash("#/health")
	b.wait("doctor", textOf("#doctor-verdict")+` !== ""`)
	for _, href := range []string{"/metrics", "/openapi.json", "https://github.com/eventlite/eventlite/blob/main/docs/http.md"} {
		if !evalJS[bool](b, `!!document.querySelector('a[href="`+href+`"]')`) {
			t.Fatalf("no link to %s", href)
		}
	}

	// A narrow window: nothing wider than the window but the tables'
	// own scrolling boxes.
	b.do(chromedp.EmulateViewport(390, 844))
	for _, v := range []struct{ view, ready string }{
		{"#/", textOf("#ov-events") + ` !== "…"`},
		{"#/streams", rows("#streams-table") + ` === 50`},
		{"#/append", `document.getElementById('ap-submit')`},
		{"#/event/evil-1", textOf("#event-data") + `.includes("onerror")`},
		{"#/stream/order-1", rows("#stream-events") + ` === 6`},
	} {
		b.hash(v.view)
		b.wait(v.view, v.ready)
		if stray := evalJS[string](b, `(document.getElementById('main').innerText.match(/\b(null|undefined|NaN|\[object Object\])\b/) || [""])[0]`); stray != "" {
			t.Fatalf("%s shows %q: %s", v.view, stray, b.mainText())
		}
		if !evalJS[bool](b, `document.documentElement.scrollWidth <= window.innerWidth`) {
			t.Fatalf("%s overflows a narrow window: %v > %v", v.view, evalJS[int](b, `document.documentElement.scrollWidth`), evalJS[int](b, `window.innerWidth`))
		}
	}
	b.screenshot("narrow")
	b.do(chromedp.EmulateViewport(1280, 900))

	// A one-tenant token: no switcher, and the store-wide views say they
	// need a * token.
	b.open(ts.url + "/")
	b.wait("signed in", `!document.getElementById('logout').hidden`)
	b.do(chromedp.Click(chromedp.CSS("#logout")))
	b.do(chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), "s3cret-shop"), chromedp.Click(chromedp.CSS("#login button")))
	b.wait("the shop token's overview", textOf("#ov-events")+` !== "…" && `+textOf("#ov-events")+` !== ""`)
	if !evalJS[bool](b, `document.getElementById('tenant-box').hidden && `+textOf(".note")+`.includes("needs a token for tenant *")`) {
		t.Fatalf("a one-tenant token: switcher shown or no note: %s", b.mainText())
	}
	b.hash("#/consumers")
	b.wait("the consumers note", textOf(".note")+`.includes("needs a token for tenant *") && document.getElementById('dead-letters') === null`)
}
