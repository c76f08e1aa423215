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

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
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
	l, err := s.Leases().Acquire(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.DeadLetter(ctx, l, []store.Failure{{Position: 3, Error: "broker refused"}})
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
