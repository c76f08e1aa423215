package postgres_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/store"
)

// goTool runs the go command in dir and returns its output.
func goTool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// A program that opens SQLite files only (testdata/sqliteonly, which
// does not import this package) links no pgx; it stores and reads an
// event; and a postgres:// address given to it fails with
// ErrNoPostgresDriver, naming the import to add and not the password.
func TestSQLiteOnlyProgramLinksNoPgx(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with the go tool")
	}
	const prog = "./testdata/sqliteonly"
	deps := strings.Fields(goTool(t, ".", "list", "-deps", prog))
	var sawStore bool
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/jackc/") {
			t.Errorf("a SQLite-only program links %s", d)
		}
		sawStore = sawStore || d == "github.com/eventlite/eventlite/store"
	}
	if !sawStore {
		t.Fatalf("go list -deps %s does not list the store: the check looks at the wrong program: %v", prog, deps)
	}
	// The negative control: this package does link it.
	if !strings.Contains(goTool(t, ".", "list", "-deps", "."), "github.com/jackc/pgx/v5\n") {
		t.Errorf("store/postgres does not link pgx: the check above proves nothing")
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "sqliteonly")
	goTool(t, ".", "build", "-o", bin, prog)
	out, err := exec.Command(bin, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	got := string(out)
	for _, want := range []string{
		"sqlite: position 1\n",
		"postgres: store: postgres://alice:xxxxx@127.0.0.1:5432/db?sslmode=disable: " + store.ErrNoPostgresDriver.Error(),
		`add import _ "github.com/eventlite/eventlite/store/postgres"`,
		"is ErrNoPostgresDriver: true\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "s3cret-pw") {
		t.Errorf("the error shows the password:\n%s", got)
	}
}

// With this package imported (as here), Open takes a postgres:// address
// to the driver: the schema version is the driver's, not 0.
func TestImportRegistersTheDriver(t *testing.T) {
	if v := store.PostgresSchemaVersion(); v == 0 {
		t.Fatalf("PostgresSchemaVersion = 0 with store/postgres imported")
	}
}
