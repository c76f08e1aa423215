package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sqliteOnly matches SQL that only SQLite speaks: savepoints run by hand
// (tx.Nested is the store's), its catalog tables and pragmas, and its
// table rename. Plain SQL on a read model's own tables (examples/bank,
// the CLI's demo) is not matched.
var sqliteOnly = regexp.MustCompile(`(?i)\bSAVEPOINT\b|\bROLLBACK\s+TO\b|\bsqlite_(?:master|schema|temp_master|temp_schema|sequence)\b|\bPRAGMA\b|\bpragma_\w+|\bRENAME\s+TO\b`)

// sqliteProper matches what only SQLite understands: its catalog tables
// and pragmas. A driver of another engine runs its own savepoints and
// renames, in standard SQL, but none of these.
var sqliteProper = regexp.MustCompile(`(?i)\bsqlite_(?:master|schema|temp_master|temp_schema|sequence)\b|\bPRAGMA\b|\bpragma_\w+`)

// stringsMatching returns "line: token" for every string literal of the
// Go source src that re matches. Comments are not looked at: SQL runs
// from string literals only.
func stringsMatching(t *testing.T, name string, src []byte, re *regexp.Regexp) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatalf("%s: unquote %s: %v", fset.Position(lit.Pos()), lit.Value, err)
		}
		for _, m := range re.FindAllString(s, -1) {
			found = append(found, fset.Position(lit.Pos()).String()+": "+m)
		}
		return true
	})
	return found
}

// goSources walks the module from root and calls fn for every Go file
// that is not a test, outside testdata and hidden directories.
func goSources(t *testing.T, root string, fn func(rel string, src []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fn(filepath.ToSlash(rel), src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNoSQLiteSQLOutsideStore: no package but store runs SQLite-only SQL
// (savepoints, sqlite_master, pragmas, renames), so that a second driver
// needs no change in projection, replay, the CLI or anywhere else; and in
// store, the catalog queries and renames are in catalog_sqlite.go only.
func TestNoSQLiteSQLOutsideStore(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	var outside, statements, imports []string
	scanned := 0
	goSources(t, root, func(rel string, src []byte) {
		scanned++
		switch dir := filepath.ToSlash(filepath.Dir(rel)); {
		case dir == "store/internal/sqlitedriver":
			// The SQLite driver: every SQLite statement belongs here.
		case dir == "store/internal/pgdriver", dir == "store/internal/driver/sqlshared":
			// The PostgreSQL driver, and what both drivers share, run the
			// savepoints and renames the scopes and rebuilds need, in SQL
			// both engines take.
			outside = append(outside, stringsMatching(t, rel, src, sqliteProper)...)
		case dir == "store":
			statements = append(statements, stringsMatching(t, rel, src, sqlStatement)...)
			statements = append(statements, stringsMatching(t, rel, src, sqlClause)...)
			imports = append(imports, engineImports(t, rel, src)...)
		default:
			outside = append(outside, stringsMatching(t, rel, src, sqliteOnly)...)
		}
	})
	if scanned < 100 {
		t.Fatalf("scanned %d Go files under %s: not the module", scanned, root)
	}
	if len(outside) > 0 {
		t.Errorf("SQLite-only SQL outside the SQLite driver (use tx.Nested, tx.TableExists, rt.TableExists, tx.RenameTable):\n%s", strings.Join(outside, "\n"))
	}
	if len(statements) > 0 {
		t.Errorf("SQL in package store: its statements belong to a driver (store/internal/driver declares the operation, store/internal/sqlitedriver runs it):\n%s",
			strings.Join(statements, "\n"))
	}
	if len(imports) > 0 {
		t.Errorf("package store reaches an engine directly:\n%s", strings.Join(imports, "\n"))
	}
}

// sqlStatement matches a string literal that starts an SQL statement, and
// sqlClause one that holds a clause of one (a fragment joined to a query
// built elsewhere). The store writes SQL keywords in capitals: "begin:
// %w" and "from %s" are prose.
var (
	sqlStatement = regexp.MustCompile(`(?s)^\s*(?:SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|PRAGMA|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|WITH|VACUUM|ANALYZE)\b`)
	sqlClause    = regexp.MustCompile(`\b(?:FROM|WHERE|JOIN|VALUES|ORDER BY|GROUP BY|ON CONFLICT|RETURNING|LIMIT)\s`)
)

// engineImports returns the imports of a file of package store that name
// an engine: only store.go and dialect.go, which choose the driver, may
// import a driver, and no file imports modernc.org/sqlite.
func engineImports(t *testing.T, rel string, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
	var found []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case strings.HasPrefix(path, "modernc.org/sqlite"), strings.HasPrefix(path, "github.com/jackc/pgx"):
			found = append(found, rel+": imports "+path)
		case (strings.HasSuffix(path, "/store/internal/sqlitedriver") || strings.HasSuffix(path, "/store/internal/pgdriver")) && rel != "store/store.go" && rel != "store/dialect.go":
			found = append(found, rel+": imports "+path)
		}
	}
	return found
}

// TestSQLDetector: the store's SQL detectors find statements and clauses
// in interpreted and raw strings and ignore prose and comments.
func TestSQLDetector(t *testing.T) {
	src := []byte("package p\n" +
		"// SELECT x FROM y in a comment\n" +
		"var a = `SELECT x FROM y`\n" +
		"var b = \"  INSERT INTO t VALUES (1)\"\n" +
		"var c = sel + ` WHERE tenant = ?`\n" +
		"var d = fmt.Errorf(\"begin: %w\", err)\n" +
		"var e = \"read events from %d where the stream is\"\n")
	got := append(stringsMatching(t, "p.go", src, sqlStatement), stringsMatching(t, "p.go", src, sqlClause)...)
	want := []string{"p.go:3:9: SELECT", "p.go:4:9:   INSERT", "p.go:3:9: FROM ", "p.go:4:9: VALUES ", "p.go:5:15: WHERE "}
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
}

// TestSQLiteOnlyDetector: the detector of TestNoSQLiteSQLOutsideStore
// finds each kind in interpreted and raw strings, in any case, and
// ignores comments and prose.
func TestSQLiteOnlyDetector(t *testing.T) {
	src := []byte("package p\n" +
		"// SAVEPOINT in a comment, sqlite_master, PRAGMA, RENAME TO: ignored\n" +
		"var a = \"savepoint x\"\n" +
		"var b = `SELECT name FROM sqlite_master`\n" +
		"var c = \"SELECT 1 FROM SQLITE_SCHEMA\"\n" +
		"var d = \"PRAGMA user_version\"\n" +
		"var e = \"ALTER TABLE a \" + \"RENAME  TO b\"\n" +
		"var f = `SELECT * FROM pragma_table_info(?)`\n" +
		"var g = \"rollback to x\"\n" +
		"var h = \"release the lease, rename the file to x, and save points\"\n")
	got := stringsMatching(t, "p.go", src, sqliteOnly)
	for i, g := range got {
		got[i] = g[strings.Index(g, ": ")+2:]
	}
	want := []string{"savepoint", "sqlite_master", "SQLITE_SCHEMA", "PRAGMA", "RENAME  TO", "pragma_table_info", "rollback to"}
	if !slices.Equal(got, want) {
		t.Fatalf("found %q, want %q", got, want)
	}
}
