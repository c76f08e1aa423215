package tracing

import (
	"os/exec"
	"strings"
	"testing"
)

// The library links only the OpenTelemetry API: the SDK and exporters
// are the service's choice.
func TestLibraryLinksOnlyTheOTelAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	pkgs := []string{"envelope", "store", "aggregate", "decision", "projection", "publish", "natsjs", "replay", "metrics", "internal/tracing"}
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, "github.com/eventlite/eventlite/"+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	api := false
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(dep, "go.opentelemetry.io/otel/exporters") {
			t.Errorf("a library package links %s: only the OpenTelemetry API belongs in the library", dep)
		}
		if dep == "go.opentelemetry.io/otel/trace" {
			api = true
		}
	}
	if !api {
		t.Error("go list shows no go.opentelemetry.io/otel/trace: the check looks at the wrong packages")
	}
}
