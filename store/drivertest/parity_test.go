package drivertest

import (
	"strings"
	"testing"
)

// TestParityRefusesASkippedGuarantee: a driver that skips a test of the
// suite fails its run, naming the test; one that fileOnly lists, with a
// reason, passes.
func TestParityRefusesASkippedGuarantee(t *testing.T) {
	if err := checkParity("postgres", nil); err != nil {
		t.Fatalf("nothing skipped: %v", err)
	}
	err := checkParity("postgres", []string{"reopen/second store"})
	if err == nil || !strings.Contains(err.Error(), "reopen/second store") || !strings.Contains(err.Error(), "postgres") {
		t.Fatalf("a skipped test: got %v, want an error naming the driver and the test", err)
	}
	fileOnly["reopen/second store"] = "needs a file (test)"
	defer delete(fileOnly, "reopen/second store")
	if err := checkParity("postgres", []string{"reopen/second store"}); err != nil {
		t.Fatalf("a listed file-only test: %v", err)
	}
}

// TestEveryTestNameIsUnique: parity is by name, so two tests of the
// suite must never share one.
func TestEveryTestNameIsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range guarantees {
		for _, tc := range g.tests {
			name := g.name + "/" + tc.name
			if seen[name] {
				t.Errorf("two tests named %q", name)
			}
			seen[name] = true
		}
	}
	if len(seen) == 0 {
		t.Fatal("the suite has no tests")
	}
}
