package doccheck_test

import (
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The section of docs/errors.md whose tables list the library's errors.
const errorsSection = "Errors (the library)"

// exportedError is one exported error of a package: a sentinel
// ("store.ErrConflict") or a type implementing error ("*store.ConflictError",
// the star when only the pointer implements it).
type exportedError struct {
	name string // as the page writes it
	pos  string // where the code declares it
}

// exportedErrors finds, with go/types over the packages' export data, the
// exported errors of every importable package of the module: not
// internal, not a command.
func exportedErrors(t *testing.T) []exportedError {
	t.Helper()
	all, own := goList(t)
	fset := token.NewFileSet()
	imp := exportImporter(fset, all)
	errorType := types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	qualifiers := map[string]string{}
	var out []exportedError
	for _, path := range own {
		lp := all[path]
		if lp.Name == "main" || lp.Export == "" || isInternal(path) {
			continue
		}
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s from its export data: %v", path, err)
		}
		q := pkg.Name()
		if other, dup := qualifiers[q]; dup {
			t.Fatalf("packages %s and %s are both %q: the errors page cannot tell their errors apart", other, path, q)
		}
		qualifiers[q] = path
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			pos := fset.Position(obj.Pos()).String()
			switch obj := obj.(type) {
			case *types.Var:
				if strings.HasPrefix(name, "Err") && types.Implements(obj.Type(), errorType) {
					out = append(out, exportedError{name: q + "." + name, pos: pos})
				}
			case *types.TypeName:
				if _, generic := obj.Type().(*types.Named); generic && obj.Type().(*types.Named).TypeParams().Len() > 0 {
					continue
				}
				if types.IsInterface(obj.Type()) {
					continue
				}
				switch {
				case types.Implements(obj.Type(), errorType):
					out = append(out, exportedError{name: q + "." + name, pos: pos})
				case types.Implements(types.NewPointer(obj.Type()), errorType):
					out = append(out, exportedError{name: "*" + q + "." + name, pos: pos})
				}
			}
		}
	}
	return out
}

// isInternal reports whether an import path has an internal element.
func isInternal(path string) bool {
	for _, e := range strings.Split(path, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

// exportImporter imports packages from the export data go list named.
func exportImporter(fset *token.FileSet, all map[string]*listedPackage) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p, ok := all[path]
		if !ok || p.Export == "" {
			return nil, fmt.Errorf("no export data for %s (go list -export)", path)
		}
		return os.Open(p.Export)
	})
}

// errorNameRE matches a name as the page writes it: "store.ErrConflict",
// "*store.ConflictError", "natsjs.*TooLargeError", or, after a
// qualified one in the same cell, "*ConflictError".
var errorNameRE = regexp.MustCompile(`^(\*?)(?:([a-z][a-z0-9]*)\.)?(\*?)([A-Z][A-Za-z0-9]*)$`)

// pageErrors returns the errors the page's tables name in their first
// column, with their lines; problems for names it cannot read.
func pageErrors(d *doc) (names map[string]int, problems []string) {
	lines, first, ok := d.section(errorsSection)
	if !ok {
		return nil, []string{d.path + `: no "## ` + errorsSection + `" section`}
	}
	names = map[string]int{}
	for _, r := range tableRows(lines, first) {
		pkg := ""
		for _, span := range codeSpans(r.cells[0]) {
			for _, word := range strings.FieldsFunc(span, func(r rune) bool { return r == ',' || r == ' ' || r == '(' || r == ')' || r == '=' }) {
				m := errorNameRE.FindStringSubmatch(word)
				if m == nil {
					continue
				}
				if m[2] != "" {
					pkg = m[2]
				} else if pkg == "" {
					problems = append(problems, fmt.Sprintf("%s: %q names no package: write it qualified (store.%s)", d.at(r.line), word, strings.TrimPrefix(word, "*")))
					continue
				}
				star := m[1] + m[3]
				names[star+pkg+"."+m[4]] = r.line
			}
		}
	}
	return names, problems
}

// checkErrorsPage reports the errors the code exports and the page does
// not list, and the names the page lists that the code does not export.
func checkErrorsPage(d *doc, code []exportedError) []string {
	names, problems := pageErrors(d)
	if names == nil {
		return problems
	}
	_, first, _ := d.section(errorsSection)
	exported := map[string]bool{}
	for _, e := range code {
		exported[e.name] = true
		if _, ok := names[e.name]; !ok {
			problems = append(problems, fmt.Sprintf("%s: %s (declared at %s) is not in the errors table: add a row (what it means, retryable, CLI exit)", d.at(first), e.name, e.pos))
		}
	}
	var listed []string
	for n := range names {
		listed = append(listed, n)
	}
	slices.Sort(listed)
	for _, n := range listed {
		if !exported[n] {
			hint := "no such exported error"
			if alt := strings.TrimPrefix(n, "*"); alt != n && exported[alt] {
				hint = "the value type implements error: write " + alt
			} else if exported["*"+n] {
				hint = "only the pointer implements error: write *" + n
			}
			problems = append(problems, fmt.Sprintf("%s: %s is listed but the code exports no such error (%s)", d.at(names[n]), n, hint))
		}
	}
	return problems
}

// TestErrorsPage: docs/errors.md lists exactly the exported errors of
// every package a program can import: the sentinels (Err... variables)
// and the exported types that implement error.
func TestErrorsPage(t *testing.T) {
	t.Parallel()
	page := readDoc(t, "docs/errors.md")
	code := exportedErrors(t)
	for _, p := range checkErrorsPage(page, code) {
		t.Error(p)
	}
	t.Logf("%d exported errors", len(code))

	t.Run("planted", func(t *testing.T) {
		// A row forgets store.ErrBusy, and one names an error that is not.
		planted := newDoc(page.path, strings.Replace(page.text(), "| `store.ErrBusy` |", "| `store.ErrBusyness` |", 1))
		problems := checkErrorsPage(planted, code)
		requireReport(t, problems, "docs/errors.md:", "store.ErrBusy (declared at", "is not in the errors table")
		requireReport(t, problems, "docs/errors.md:", "store.ErrBusyness is listed but the code exports no such error")
	})
}
