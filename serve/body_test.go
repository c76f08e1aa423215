package serve_test

import (
	"testing"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store/effect"
)

// TestJSONBodiesOneDecoder: every JSON body that is not events (a
// truncate, a decision on an effect, a session's token) refuses a member
// given twice and a value of the wrong type with 400 invalid-body naming
// the member, and changes nothing: no truncate, no decision, no session.
func TestJSONBodiesOneDecoder(t *testing.T) {
	ts := newServer(t, nil)
	ts.appendN("default", "s", 4, "t")
	var c calls
	r := refund("default", "refund:o-1")
	request(t, ts.s, r, &c)
	withTokens := newServer(t, &serve.Options{Tokens: []serve.Token{{Secret: "s3cret", Tenant: "a"}}})

	json := []string{"Content-Type", "application/json"}
	for _, tc := range []struct {
		name, path, body string
		ts               *testServer
		header           []string
		field, reason    string
	}{
		{"truncate twice", streamPath + "s/truncate", `{"before":2,"before":3}`, ts, json, "before", "given twice"},
		{"truncate a string", streamPath + "s/truncate", `{"before":"3"}`, ts, json, "before", "must be a whole number"},
		{"truncate a fraction", streamPath + "s/truncate", `{"before":3.0}`, ts, json, "before", "must be a whole number"},
		{"truncate an exponent", streamPath + "s/truncate", `{"before":3e0}`, ts, json, "before", "must be a whole number"},
		{"truncate true", streamPath + "s/truncate", `{"before":true}`, ts, json, "before", "must be a whole number"},
		{"truncate null", streamPath + "s/truncate", `{"before":null}`, ts, json, "before", "must be a whole number"},
		{"reject twice", effectPath("default", r.Key, "reject"), `{"by":"a","by":"b"}`, ts, json, "by", "given twice"},
		{"reject a number", effectPath("default", r.Key, "reject"), `{"by":"a","reason":1}`, ts, json, "reason", "must be a string"},
		{"session twice", "/ui/session", `{"token":"wrong","token":"s3cret"}`, withTokens, append([]string{"Sec-Fetch-Site", "same-origin"}, json...), "token", "given twice"},
		{"session a number", "/ui/session", `{"token":1}`, withTokens, append([]string{"Sec-Fetch-Site", "same-origin"}, json...), "token", "must be a string"},
		{"session an array", "/ui/session", `{"token":["s3cret"]}`, withTokens, append([]string{"Sec-Fetch-Site", "same-origin"}, json...), "token", "must be a string"},
		{"session unknown", "/ui/session", `{"token":"s3cret","tenant":"a"}`, withTokens, append([]string{"Sec-Fetch-Site", "same-origin"}, json...), "tenant", "unknown member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.ts.do("POST", tc.path, []byte(tc.body), tc.header...)
			p := res.wantProblem(t, 400, "invalid-body")
			if p["field"] != tc.field || p["reason"] != tc.reason {
				t.Errorf("field %v reason %v, want %s %q: %s", p["field"], p["reason"], tc.field, tc.reason, res.body)
			}
			if len(res.header.Values("Set-Cookie")) != 0 {
				t.Errorf("a refused body set a cookie: %v", res.header.Values("Set-Cookie"))
			}
		})
	}
	if got := ts.head(); got != 4 || len(ts.events("default", "s")) != 4 {
		t.Errorf("head %d: a refused truncate changed the stream", got)
	}
	if e := ts.effect("default", r.Key); e.State != effect.AwaitingApproval {
		t.Errorf("a refused decision changed the effect: %+v", e)
	}
}
