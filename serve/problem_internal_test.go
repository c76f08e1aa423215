package serve

import (
	"os"
	"strings"
	"testing"
)

// Every problem's type URI points at an anchor of docs/http.md: a
// "### name" heading.
func TestProblemAnchorsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/http.md")
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok {
			headings[strings.TrimSpace(name)] = true
		}
	}
	for name := range problemKinds {
		if !headings[name] {
			t.Errorf("problem %q has no \"### %s\" heading in docs/http.md (its type URI's anchor)", name, name)
		}
	}
}
