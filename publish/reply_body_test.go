package publish_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestRelayNeverRecordsReplyBody: an HTTP sink that refuses events with
// a reply echoing them (422: a dead letter at once; 503: a transient
// failure, given up at the bound) leaves their status and a generic
// reason in outbox.last_error and the relay's log, never the reply body
// nor the event's data (which a forget could not reach there). On
// SQLite and on PostgreSQL: the relay is shared, the recording is each
// driver's.
func TestRelayNeverRecordsReplyBody(t *testing.T) {
	stores := map[string]func(t *testing.T) *store.Store{
		"sqlite": func(t *testing.T) *store.Store {
			return openAt(t, filepath.Join(t.TempDir(), "x.db"), nil)
		},
		"postgres": func(t *testing.T) *store.Store {
			return openAt(t, storetest.PostgresSchema(t, storetest.PostgresBase(t)), nil)
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			replyBodyNotRecorded(t, open(t))
		})
	}
}

func replyBodyNotRecorded(t *testing.T, s *store.Store) {
	ctx := context.Background()
	const secret = "secret-marker-4111"
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		all := string(body) + " " + r.Header.Get("ce-type")
		switch {
		case r.Method == http.MethodOptions:
		case strings.Contains(all, "t.refused"):
			http.Error(w, "invalid: "+string(body), http.StatusUnprocessableEntity)
		case strings.Contains(all, "t.busy"):
			http.Error(w, "try later: "+string(body), http.StatusServiceUnavailable)
		}
	}))
	defer sink.Close()
	pub, err := publish.NewHTTP(publish.HTTPOptions{URL: sink.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for _, typ := range []string{"t.refused", "t.busy", "t.ok"} {
		if _, err := s.Append(ctx, "default", typ, store.Any, newEvent(t, typ, map[string]any{"card": secret})); err != nil {
			t.Fatal(err)
		}
	}
	var log syncBuffer
	r, err := publish.New(publish.Options{Store: s, Publisher: pub, Once: true, MaxAttempts: 1,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &log})})
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Run(ctx) // two dead letters: it says so
	got := map[string]string{}
	for _, e := range outboxEntries(t, s) {
		got[e.Stream] = e.LastError
	}
	for stream, code := range map[string]string{"t.refused": "422", "t.busy": "503"} {
		text := got[stream]
		if !strings.Contains(text, code) || strings.Contains(text, secret) || strings.Contains(text, "invalid:") || strings.Contains(text, "try later") {
			t.Errorf("last_error of %s: %q, want the status %s and no reply body or data", stream, text, code)
		}
	}
	if l := log.String(); strings.Contains(l, secret) || !strings.Contains(l, "422") {
		t.Errorf("the relay's log holds the data or lacks the failures:\n%s", l)
	}
}
