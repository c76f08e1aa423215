package doccheck_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The section of docs/design.md that holds the package table.
const packagesSection = "Packages"

// checkPackageTable compares docs/design.md's package table with the
// module's packages: one row per package (its path relative to the
// module in the first column, in backquotes), whose last column lists
// its direct non-test imports inside the module, comma-separated, or
// "none". imports maps each package (module-relative) to those imports.
func checkPackageTable(d *doc, imports map[string][]string) []string {
	lines, first, ok := d.section(packagesSection)
	if !ok {
		return []string{d.path + `: no "## ` + packagesSection + `" section`}
	}
	var problems []string
	rows := map[string]int{}
	for _, r := range tableRows(lines, first) {
		if len(r.cells) < 3 {
			problems = append(problems, fmt.Sprintf("%s: a row of the package table with %d columns, want 3 (package, keeps, imports of ours)", d.at(r.line), len(r.cells)))
			continue
		}
		spans := codeSpans(r.cells[0])
		if len(spans) != 1 {
			problems = append(problems, fmt.Sprintf("%s: the first column must name one package in backquotes, not %q", d.at(r.line), r.cells[0]))
			continue
		}
		pkg := spans[0]
		if prev, dup := rows[pkg]; dup {
			problems = append(problems, fmt.Sprintf("%s: package %s has a second row (the first is line %d)", d.at(r.line), pkg, prev))
			continue
		}
		rows[pkg] = r.line
		want, known := imports[pkg]
		if !known {
			problems = append(problems, fmt.Sprintf("%s: package %s is in the table but not in the module (go list ./...): remove its row", d.at(r.line), pkg))
			continue
		}
		got := parseImportList(r.cells[len(r.cells)-1])
		if missing, extra := diffSets(want, got); len(missing)+len(extra) > 0 {
			var say []string
			if len(missing) > 0 {
				say = append(say, "add "+strings.Join(missing, ", "))
			}
			if len(extra) > 0 {
				say = append(say, "remove "+strings.Join(extra, ", "))
			}
			problems = append(problems, fmt.Sprintf("%s: package %s imports %s (go list), the table says %s: %s",
				d.at(r.line), pkg, importList(want), importList(got), strings.Join(say, "; ")))
		}
	}
	var pkgs []string
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, p := range pkgs {
		if _, ok := rows[p]; !ok {
			problems = append(problems, fmt.Sprintf("%s:%d: package %s has no row in the package table: add `%s` | what it keeps | %s",
				d.path, first, p, p, importList(imports[p])))
		}
	}
	return problems
}

// parseImportList reads "a, b" or "none" (backquotes allowed).
func parseImportList(cell string) []string {
	cell = strings.ReplaceAll(cell, "`", "")
	if strings.TrimSpace(cell) == "none" {
		return nil
	}
	var out []string
	for _, f := range strings.Split(cell, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// importList is how the table writes a list of imports.
func importList(pkgs []string) string {
	if len(pkgs) == 0 {
		return "none"
	}
	return strings.Join(pkgs, ", ")
}

// diffSets returns what want has and got lacks, and the reverse.
func diffSets(want, got []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

// moduleImports maps each package of the module (relative path) to its
// direct non-test imports inside the module, sorted.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	all, own := goList(t)
	out := map[string][]string{}
	for _, path := range own {
		p := all[path]
		deps := []string{}
		for _, imp := range p.Imports {
			if imp == modulePath || strings.HasPrefix(imp, modulePath+"/") {
				deps = append(deps, rel(imp))
			}
		}
		slices.Sort(deps)
		out[rel(path)] = deps
	}
	return out
}

// TestDesignPackageTable: docs/design.md's package table has one row per
// package of the module, with its direct imports of ours as go list has
// them.
func TestDesignPackageTable(t *testing.T) {
	t.Parallel()
	design := readDoc(t, "docs/design.md")
	imports := moduleImports(t)
	for _, p := range checkPackageTable(design, imports) {
		t.Error(p)
	}

	t.Run("planted", func(t *testing.T) {
		// The store row loses an import it has, and gains one it has not.
		lines, first, _ := design.section(packagesSection)
		planted := newDoc(design.path, design.text())
		for _, r := range tableRows(lines, first) {
			if len(r.cells) == 3 && r.cells[0] == "`store`" {
				l := planted.lines[r.line-1]
				i := strings.LastIndex(l, "|")
				j := strings.LastIndex(l[:i], "|")
				planted.lines[r.line-1] = l[:j] + "| serve, " + strings.Join(imports["store"][1:], ", ") + " |"
			}
		}
		requireReport(t, checkPackageTable(planted, imports), "docs/design.md:", "package store imports", "add "+imports["store"][0], "remove serve")
		// A package without a row.
		delete(imports, "envelope")
		imports["newpkg"] = []string{"envelope"}
		requireReport(t, checkPackageTable(design, imports), "package newpkg has no row")
		requireReport(t, checkPackageTable(design, imports), "package envelope is in the table but not in the module")
	})
}
