package main

import (
	"strings"
	"testing"
)

// A stored traceparent and tracestate come out byte-exact through append,
// read and tail, in the JSON output, whatever they hold: a valid W3C value
// and one that is not (it is stored and shown unchanged).
func TestTraceparentSurvivesCLI(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	checkInvariants(t, db)
	const (
		valid   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		state   = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
		invalid = "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"
	)
	in := `{"specversion":"1.0","id":"e1","source":"/t","type":"t","traceparent":"` + valid + `","tracestate":"` + state + `","data":{}}` + "\n" +
		`{"specversion":"1.0","id":"e2","source":"/t","type":"t","traceparent":"` + invalid + `","data":{}}` + "\n"
	mustRun(t, in, "append", "s", "--db", db)
	for _, args := range [][]string{{"read", "s", "--db", db}, {"tail", "--db", db}} {
		out := mustRun(t, "", args...).stdout
		for _, want := range []string{`"traceparent":"` + valid + `"`, `"tracestate":"` + state + `"`, `"traceparent":"` + invalid + `"`} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %s:\n%s", args[0], want, out)
			}
		}
		evs := decodeLines(t, out)
		if len(evs) != 2 || evs[0].Extensions["traceparent"] != valid || evs[0].Extensions["tracestate"] != state || evs[1].Extensions["traceparent"] != invalid {
			t.Errorf("%s: decoded %v", args[0], evs)
		}
	}
}
