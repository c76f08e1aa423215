package doccheck_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The section of docs/errors.md with the exit-code table.
const exitCodesSection = "Exit codes"

var exitNameRE = regexp.MustCompile(`^exit[A-Z]`)

// exitConstants returns the CLI's exit codes, the constants named exit...
// in cmd/eventlite's non-test files: code to name and place.
func exitConstants(t *testing.T) map[int]string {
	t.Helper()
	dir := filepath.Join(moduleRoot(t), "cmd", "eventlite")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[int]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !exitNameRE.MatchString(name.Name) || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.INT {
						t.Fatalf("%s: exit code %s is not an integer literal", fset.Position(name.Pos()), name.Name)
					}
					code, _ := strconv.Atoi(lit.Value)
					rel, _ := filepath.Rel(moduleRoot(t), fset.Position(name.Pos()).Filename)
					out[code] = fmt.Sprintf("%s (%s:%d)", name.Name, filepath.ToSlash(rel), fset.Position(name.Pos()).Line)
				}
			}
		}
	}
	return out
}

// helpExitCodes reads the "Exit codes:" part of `eventlite help`: code to
// meaning, white space collapsed.
func helpExitCodes(help string) map[int]string {
	_, after, ok := strings.Cut(help, "\nExit codes:\n")
	if !ok {
		return nil
	}
	out := map[int]string{}
	code := -1
	lineRE := regexp.MustCompile(`^  (\d+)  (.*)$`)
	for _, l := range strings.Split(after, "\n") {
		if strings.TrimSpace(l) == "" {
			break
		}
		if m := lineRE.FindStringSubmatch(l); m != nil {
			code, _ = strconv.Atoi(m[1])
			out[code] = m[2]
			continue
		}
		if code >= 0 {
			out[code] += " " + l
		}
	}
	for c, m := range out {
		out[c] = strings.Join(strings.Fields(m), " ")
	}
	return out
}

// checkExitCodes reports where the page's exit-code table, the help's
// list and the code's constants disagree: a code one has and another
// lacks, or a meaning the page and the help word differently.
func checkExitCodes(d *doc, help string, constants map[int]string) []string {
	lines, first, ok := d.section(exitCodesSection)
	if !ok {
		return []string{d.path + `: no "## ` + exitCodesSection + `" section`}
	}
	var problems []string
	page := map[int]string{}
	pageLine := map[int]int{}
	for _, r := range tableRows(lines, first) {
		code, err := strconv.Atoi(strings.Trim(r.cells[0], "`"))
		if err != nil || len(r.cells) < 2 {
			problems = append(problems, fmt.Sprintf("%s: an exit-code row must be | code | meaning |, not %q", d.at(r.line), strings.Join(r.cells, " | ")))
			continue
		}
		page[code], pageLine[code] = plain(r.cells[1]), r.line
	}
	printed := helpExitCodes(help)
	if printed == nil {
		return append(problems, `eventlite help prints no "Exit codes:" list`)
	}
	codes := map[int]bool{}
	for _, m := range []map[int]string{page, printed, constants} {
		for c := range m {
			codes[c] = true
		}
	}
	var all []int
	for c := range codes {
		all = append(all, c)
	}
	slices.Sort(all)
	for _, c := range all {
		_, inPage := page[c]
		_, inHelp := printed[c]
		name, inCode := constants[c]
		switch {
		case !inCode:
			problems = append(problems, fmt.Sprintf("exit code %d is in the page (%v) or the help (%v) but no exit... constant of cmd/eventlite has it", c, inPage, inHelp))
		case !inPage:
			problems = append(problems, fmt.Sprintf("%s:%d: exit code %d (%s) has no row in the exit-code table: add | %d | %s |", d.path, first, c, name, c, printed[c]))
		case !inHelp:
			problems = append(problems, fmt.Sprintf("exit code %d (%s) is not in the exitCodes list eventlite help prints (cmd/eventlite/main.go): add it as the page words it: %s", c, name, page[c]))
		case page[c] != printed[c]:
			problems = append(problems, fmt.Sprintf("%s: exit code %d: the page and eventlite help (cmd/eventlite/main.go, exitCodes) say different things; make them one text (the page's, code spans and links as plain text):\n  page: %s\n  help: %s",
				d.at(pageLine[c]), c, page[c], printed[c]))
		}
	}
	return problems
}

// TestExitCodes: docs/errors.md's exit-code table, the list `eventlite
// help` prints and cmd/eventlite's exit... constants have the same codes,
// and the page and the help the same words for each.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	page := readDoc(t, "docs/errors.md")
	printed := help(t)
	constants := exitConstants(t)
	for _, p := range checkExitCodes(page, printed, constants) {
		t.Error(p)
	}

	t.Run("planted", func(t *testing.T) {
		reworded := newDoc(page.path, regexp.MustCompile(`(?m)^\| 6 \| work remains`).ReplaceAllString(page.text(), "| 6 | work may remain"))
		requireReport(t, checkExitCodes(reworded, printed, constants), "docs/errors.md:", "exit code 6: the page and eventlite help", "page: work may remain")
		dropped := newDoc(page.path, regexp.MustCompile(`(?m)^\| 8 \| .*\n`).ReplaceAllString(page.text(), ""))
		requireReport(t, checkExitCodes(dropped, printed, constants), "docs/errors.md:", "exit code 8 (exitReplaced (cmd/eventlite/main.go:", "has no row")
		lessHelp := regexp.MustCompile(`(?m)^  7  .*\n`).ReplaceAllString(printed, "")
		requireReport(t, checkExitCodes(page, lessHelp, constants), "exit code 7 (exitBusy", "not in the exitCodes list eventlite help prints")
		moreConst := map[int]string{9: "exitNew (cmd/eventlite/main.go:1)"}
		for c, n := range constants {
			moreConst[c] = n
		}
		requireReport(t, checkExitCodes(page, printed, moreConst), "exit code 9 (exitNew", "has no row")
	})
}
