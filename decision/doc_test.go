package decision_test

import (
	"os"
	"strings"
	"testing"
)

// TestConsistencyPageIsTheExample: every Go block of docs/consistency.md
// is in example_test.go word for word, so the page's code compiles and
// its output is the examples' checked output.
func TestConsistencyPageIsTheExample(t *testing.T) {
	page, err := os.ReadFile("../docs/consistency.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	rest := string(page)
	for {
		_, after, ok := strings.Cut(rest, "```go\n")
		if !ok {
			break
		}
		block, tail, ok := strings.Cut(after, "```\n")
		if !ok {
			t.Fatal("a Go block of docs/consistency.md does not end")
		}
		blocks++
		if !strings.Contains(string(example), block) {
			first, _, _ := strings.Cut(strings.TrimSpace(block), "\n")
			t.Errorf("the Go block starting %q is not in example_test.go word for word", first)
		}
		rest = tail
	}
	if blocks < 5 {
		t.Errorf("found %d Go blocks in docs/consistency.md, want at least 5", blocks)
	}
}
