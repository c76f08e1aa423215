package scenario_test

import (
	"os/exec"
	"strings"
	"testing"
)

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, out)
	}
	return strings.Fields(string(out))
}

// The kit links no NATS and no PostgreSQL driver: its PostgreSQL runs
// come through the user's import of store/postgres in the test binary.
func TestKitLinksNoNATSAndNoPgxOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	const kit = "github.com/eventlite/eventlite/scenario"
	deps := goList(t, "-deps", kit)
	if len(deps) < 10 {
		t.Fatalf("go list -deps %s: %v: the check looks at the wrong package", kit, deps)
	}
	for _, d := range deps {
		if strings.Contains(d, "nats-io") {
			t.Errorf("the kit links %s", d)
		}
		if strings.HasPrefix(d, "github.com/jackc/") {
			t.Errorf("the kit links %s", d)
		}
	}
	for _, d := range goList(t, "-f", `{{join .Imports " "}}`, kit) {
		if strings.HasPrefix(d, "github.com/jackc/") || strings.Contains(d, "nats") {
			t.Errorf("the kit imports %s", d)
		}
	}
}
