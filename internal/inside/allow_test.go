package inside_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/eventlite/eventlite"

// allowed are the packages that may import this one: eventlite's own
// packages that keep the store's bookkeeping, and its test helpers.
// Neither examples/ nor an application's code is among them.
var allowed = []string{
	"store",
	"store/storetest",
	"store/drivertest",
	"store/effect",
	"store/erasure",
	"store/backup",
	"store/lifecycle",
	"store/outbox",
	"internal/leasing",
	"projection",
	"publish",
	"replay",
	"replay/replaycmd",
	"natsjs",
	"serve",
	"aggregate",
	"internal/command",
	"metrics",
	"cmd/eventlite",
}

// importersOutsideAllowList returns the packages of listing (lines
// "importpath: imports...", as go list prints them below) that import
// this package and are not allowed to.
func importersOutsideAllowList(listing string) []string {
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		if pkg == module+"/internal/inside" || !slices.Contains(strings.Fields(imports), module+"/internal/inside") {
			continue
		}
		if !slices.Contains(allowed, strings.TrimPrefix(pkg, module+"/")) {
			bad = append(bad, pkg)
		}
	}
	return bad
}

// TestOnlyEventlitesPackagesImportTheBoundary: every package of the
// module that imports internal/inside (in its code or its tests) is on
// the allow-list; examples/ imports it nowhere.
func TestOnlyEventlitesPackagesImportTheBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	listing := string(out)
	if !strings.Contains(listing, module+"/examples/") {
		t.Fatalf("go list shows no package of examples/: the check looks at the wrong packages\n%s", listing)
	}
	if bad := importersOutsideAllowList(listing); len(bad) > 0 {
		t.Errorf("packages outside the allow-list import internal/inside: %v; what an application may call belongs on store.Tx or a handle, what it may not stays with eventlite's packages", bad)
	}
	// The control: a package of examples/ that imported it is reported.
	forged := listing + "\n" + module + "/examples/otlp: context " + module + "/internal/inside\n"
	if bad := importersOutsideAllowList(forged); !slices.Equal(bad, []string{module + "/examples/otlp"}) {
		t.Errorf("an example importing internal/inside was not reported: got %v", bad)
	}
}

// TestAModuleOutsideCannotImportTheBoundary builds a module outside this
// repository that uses this one (by a replace directive) and imports
// internal/inside: the go tool must refuse it.
func TestAModuleOutsideCannotImportTheBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/outside\n\ngo 1.24\n\nrequire " + module + " v0.0.0\n\nreplace " + module + " => " + root + "\n",
		"main.go": "package main\n\nimport \"" + module + "/internal/inside\"\n\nvar _ inside.Key\n\nfunc main() {}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	t.Logf("go build in a module outside: %v\n%s", err, out)
	want := "use of internal package " + module + "/internal/inside not allowed"
	if err == nil || !strings.Contains(string(out), want) {
		t.Errorf("a module outside imported internal/inside: want the go tool's %q, got err %v\n%s", want, err, out)
	}
}
