package serve

import (
	"encoding/json"
	"testing"
)

// Every route has the access log's pattern, and each pattern is the
// route's path in /openapi.json, so a log line names a documented path.
func TestRoutePatternsDocumented(t *testing.T) {
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	for kind := range methods {
		p, ok := routePatterns[kind]
		if !ok {
			t.Errorf("route %q has no pattern", kind)
			continue
		}
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("route %q: pattern %q is not a path of /openapi.json", kind, p)
		}
	}
	if len(routePatterns) != len(methods) {
		t.Errorf("%d patterns for %d routes", len(routePatterns), len(methods))
	}
}
