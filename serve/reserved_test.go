package serve_test

import (
	"strings"
	"testing"

	"github.com/eventlite/eventlite/store/erasure"
)

// The store's own streams (ids starting with "eventlite-") cannot be
// appended to, deleted or truncated over HTTP: 400 invalid-event naming
// them, and nothing changes.
func TestOwnStreamsRefusedOverHTTP(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 1, "t")
	ct := []string{"Content-Type", "application/json"}
	own := streamPath + erasure.ForgottenStream
	for _, tc := range []struct {
		method, path, body string
		header             []string
	}{
		{"POST", streamEvents("default", erasure.ForgottenStream), string(structured("x-1", "t", "1")), []string{"Content-Type", "application/cloudevents+json"}},
		{"POST", streamEvents("default", "eventlite-mine"), string(structured("x-2", "t", "1")), []string{"Content-Type", "application/cloudevents+json"}},
		{"DELETE", own + "?hard=true", "", nil},
		{"DELETE", own, "", nil},
		{"POST", own + "/truncate", `{"before":2}`, ct},
	} {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		r := ts.do(tc.method, tc.path, body, tc.header...)
		p := r.wantProblem(t, 400, "invalid-event")
		if d, _ := p["detail"].(string); !strings.Contains(d, "store's own") {
			t.Errorf("%s %s: detail %q, want it to say the stream is the store's own", tc.method, tc.path, d)
		}
		if ts.head() != 1 {
			t.Fatalf("%s %s changed the store", tc.method, tc.path)
		}
	}
}
