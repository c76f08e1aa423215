package doccheck_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The rules of Go blocks (docs/testing.md, "The docs are tested too"):
//
//   - A block whose info string is "go" must compile. One that starts
//     with a package clause is a file of its own; any other is a
//     fragment.
//   - A fragment's leading import lines are its own; eventlite's
//     importable packages and the standard packages of stdPrelude are
//     imported for it as well. The rest is kept as top-level
//     declarations when it parses as such, else it becomes the body of a
//     function with the parameters of defaultSignature.
//   - An HTML comment on the line before the fence changes that:
//     <!-- go: package examples/bank; func(t *testing.T, def aggregate.Definition[Account]) -->
//     compiles the fragment as one more file of that package (its
//     non-test files), and makes it the body of a function of that
//     signature (a function with results ends with a panic, so the
//     fragment need not return on every path).
//   - <!-- go: excerpt decision/example_test.go --> says the block is
//     an excerpt of that Go file of the module, which go test compiles
//     (and whose Examples it runs): the block must be in it word for
//     word, and is not compiled alone.
//   - Unused variables and imports are allowed in fragments only.
//   - A block whose info string is "go run" is a package main file that
//     must also run: exit 0 in a temporary directory within a minute,
//     and print what its "// Output:" comment lines say, when it has them.
const defaultSignature = "func(ctx context.Context, s *store.Store, ev envelope.Event, t *testing.T)"

// stdPrelude are the standard packages imported for every fragment.
var stdPrelude = []string{"context", "database/sql", "encoding/json", "errors", "flag", "fmt", "io", "log", "net/http", "os", "strings", "testing", "time"}

// goBlock is one Go block of a document, with its marker's settings.
type goBlock struct {
	doc   *doc
	block codeBlock
	run   bool
	pkg   string // the module-relative package it compiles in, "" for none
	sig   string // the signature of the function a body fragment becomes
	// excerpt is the module-relative Go file the block is copied from,
	// word for word; "" for a block compiled on its own.
	excerpt string
}

// where names the block's first line.
func (b goBlock) where() string { return b.doc.at(b.block.line) }

var markerRE = regexp.MustCompile(`^<!--\s*go:\s*(.*?)\s*-->$`)

// goBlocks returns d's Go blocks, and problems with their markers.
func goBlocks(d *doc) ([]goBlock, []string) {
	var out []goBlock
	var problems []string
	for _, cb := range d.blocks() {
		fields := strings.Fields(cb.info)
		if len(fields) == 0 || fields[0] != "go" {
			continue
		}
		b := goBlock{doc: d, block: cb, sig: defaultSignature}
		switch {
		case len(fields) == 2 && fields[1] == "run":
			b.run = true
		case len(fields) > 1:
			problems = append(problems, fmt.Sprintf("%s: info string %q: a Go block is \"go\" or \"go run\"", d.at(cb.line-1), cb.info))
		}
		if fence := cb.line - 2; fence >= 1 {
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(d.lines[fence-1])); m != nil {
				for _, clause := range strings.Split(m[1], ";") {
					clause = strings.TrimSpace(clause)
					switch {
					case strings.HasPrefix(clause, "package "):
						b.pkg = strings.TrimSpace(strings.TrimPrefix(clause, "package "))
					case strings.HasPrefix(clause, "func("):
						b.sig = clause
					case strings.HasPrefix(clause, "excerpt "):
						b.excerpt = strings.TrimSpace(strings.TrimPrefix(clause, "excerpt "))
					default:
						problems = append(problems, fmt.Sprintf("%s: marker clause %q: want \"package DIR\", \"func(...)\" or \"excerpt FILE.go\"", d.at(fence), clause))
					}
				}
			}
		}
		out = append(out, b)
	}
	return out, problems
}

// blockImports returns the import paths a block's own import lines
// name.
func blockImports(lines []string) []string {
	src := strings.Join(lines, "\n")
	if !isFile(lines) {
		src = "package p\n" + strings.Join(lines[:leadingImports(lines)], "\n")
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.ImportsOnly)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range f.Imports {
		out = append(out, strings.Trim(s.Path.Value, `"`))
	}
	return out
}

var packageClauseRE = regexp.MustCompile(`^package [A-Za-z_][A-Za-z0-9_]*`)

// isFile reports whether a block starts with a package clause (after
// comments and blank lines).
func isFile(lines []string) bool {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		return packageClauseRE.MatchString(t)
	}
	return false
}

// leadingImports returns how many of a fragment's first lines are
// import declarations (blank and comment lines among them included).
func leadingImports(lines []string) int {
	n, inBlock := 0, false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case inBlock:
			if t == ")" {
				inBlock = false
			}
			n = i + 1
		case strings.HasPrefix(t, "import ("):
			inBlock = true
			n = i + 1
		case strings.HasPrefix(t, "import "):
			n = i + 1
		case t == "" || strings.HasPrefix(t, "//"):
		default:
			return n
		}
	}
	return n
}

// blockChecker type-checks blocks against the module's export data.
type blockChecker struct {
	root     string
	listed   map[string]*listedPackage
	own      []string
	fset     *token.FileSet
	importer types.Importer
	prelude  map[string]string // import path to name
}

func newBlockChecker(t *testing.T) *blockChecker {
	t.Helper()
	all, own := goList(t)
	fset := token.NewFileSet()
	c := &blockChecker{root: moduleRoot(t), listed: all, own: own, fset: fset, importer: exportImporter(fset, all), prelude: map[string]string{}}
	for _, p := range own {
		lp := all[p]
		if lp.Name != "main" && lp.Export != "" && !isInternal(p) {
			c.prelude[p] = lp.Name
		}
	}
	for _, p := range stdPrelude {
		c.prelude[p] = path2name(p)
	}
	return c
}

func path2name(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// check type-checks one block and returns its errors, each naming the
// document line.
func (c *blockChecker) check(b goBlock) []string {
	lines := b.block.lines
	name := b.doc.path
	if b.excerpt != "" {
		return c.checkExcerpt(b)
	}
	if isFile(lines) {
		if b.pkg != "" {
			return []string{b.where() + ": a block with a package clause takes no package marker"}
		}
		src := fmt.Sprintf("//line %s:%d\n%s\n", name, b.block.line, strings.Join(lines, "\n"))
		return c.typeCheck(b, "docblock", nil, src, false)
	}
	if b.run {
		return []string{b.where() + `: a "go run" block must be a package main file`}
	}

	// The context: a package's own files, or none.
	pkgName, pkgPath := "docblock", "docblock"
	var ctxFiles []*ast.File
	taken := map[string]bool{}
	if b.pkg != "" {
		lp, ok := c.listed[modulePath+"/"+b.pkg]
		if !ok {
			return []string{fmt.Sprintf("%s: marker names package %s, which the module does not have", b.where(), b.pkg)}
		}
		pkgName, pkgPath = lp.Name, lp.ImportPath
		for _, f := range lp.GoFiles {
			file, err := parser.ParseFile(c.fset, filepath.Join(lp.Dir, f), nil, 0)
			if err != nil {
				return []string{fmt.Sprintf("%s: parse %s: %v", b.where(), f, err)}
			}
			ctxFiles = append(ctxFiles, file)
			for _, d := range file.Decls {
				for _, id := range declNames(d) {
					taken[id] = true
				}
			}
		}
	}

	n := leadingImports(lines)
	own := blockImports(lines)
	var imports []string
	for _, p := range own {
		taken[path2name(p)] = true
	}
	var prelude []string
	for p := range c.prelude {
		prelude = append(prelude, p)
	}
	slices.Sort(prelude)
	for _, p := range prelude {
		if nm := c.prelude[p]; !taken[nm] && !slices.Contains(own, p) {
			imports = append(imports, fmt.Sprintf("%s %q", nm, p))
			taken[nm] = true
		}
	}
	head := fmt.Sprintf("package %s\n\nimport (\n\t%s\n)\n", pkgName, strings.Join(imports, "\n\t"))
	if n > 0 {
		head += fmt.Sprintf("//line %s:%d\n%s\n", name, b.block.line, strings.Join(lines[:n], "\n"))
	}
	rest := strings.Join(lines[n:], "\n")
	restLine := b.block.line + n
	top := fmt.Sprintf("%s//line %s:%d\n%s\n", head, name, restLine, rest)
	if _, err := parser.ParseFile(token.NewFileSet(), "docblock.go", top, 0); err == nil {
		return c.typeCheckIn(b, pkgPath, ctxFiles, top)
	}
	sig := strings.TrimPrefix(b.sig, "func")
	end := "\t}\n}\n"
	if !strings.HasSuffix(strings.TrimSpace(sig), ")") {
		end = "\t}\n\tpanic(\"unreachable\")\n}\n"
	}
	body := fmt.Sprintf("%sfunc _%s {\n\t{\n//line %s:%d\n%s\n%s", head, sig, name, restLine, rest, end)
	return c.typeCheckIn(b, pkgPath, ctxFiles, body)
}

func (c *blockChecker) typeCheckIn(b goBlock, pkgPath string, ctxFiles []*ast.File, src string) []string {
	return c.typeCheck(b, pkgPath, ctxFiles, src, true)
}

// typeCheck parses src and checks it with ctxFiles as one package;
// lenient allows unused variables and imports.
func (c *blockChecker) typeCheck(b goBlock, pkgPath string, ctxFiles []*ast.File, src string, lenient bool) []string {
	f, err := parser.ParseFile(c.fset, "docblock.go", src, parser.ParseComments)
	if err != nil {
		var list []string
		for _, line := range strings.Split(err.Error(), "\n") {
			list = append(list, fmt.Sprintf("%s (a Go block): does not parse: %s", b.where(), line))
		}
		return list
	}
	var problems []string
	conf := types.Config{
		Importer: c.importer,
		Error: func(err error) {
			var te types.Error
			if errors.As(err, &te) {
				if lenient && te.Soft && (strings.Contains(te.Msg, "declared and not used") || strings.Contains(te.Msg, "imported and not used")) {
					return
				}
				pos := te.Fset.Position(te.Pos)
				if pos.Filename != b.doc.path {
					problems = append(problems, fmt.Sprintf("%s (a Go block): %s: %s", b.where(), pos, te.Msg))
					return
				}
				problems = append(problems, fmt.Sprintf("%s:%d: (a Go block) %s", pos.Filename, pos.Line, te.Msg))
				return
			}
			problems = append(problems, fmt.Sprintf("%s (a Go block): %v", b.where(), err))
		},
	}
	_, _ = conf.Check(pkgPath, c.fset, append(slices.Clone(ctxFiles), f), nil)
	return problems
}

// declNames returns the names a top-level declaration declares.
func declNames(d ast.Decl) []string {
	var out []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			out = append(out, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					out = append(out, n.Name)
				}
			case *ast.TypeSpec:
				out = append(out, s.Name.Name)
			}
		}
	}
	return out
}

// runBlock runs a "go run" block from a directory inside the module (so
// that it builds with the module's go.mod and go.sum) and compares its
// output with its "// Output:" lines.
func (c *blockChecker) runBlock(b goBlock) []string {
	dir, err := os.MkdirTemp(filepath.Join(c.root, "internal", "doccheck"), "_run-")
	if err != nil {
		return []string{err.Error()}
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(strings.Join(b.block.lines, "\n")+"\n"), 0o644); err != nil {
		return []string{err.Error()}
	}
	bin := filepath.Join(dir, "block")
	rel, _ := filepath.Rel(c.root, filepath.Join(dir, "main.go"))
	if _, err := runGo(c.root, 10*time.Minute, "build", "-o", bin, "./"+filepath.ToSlash(rel)); err != nil {
		return []string{fmt.Sprintf("%s (a go run block): %v", b.where(), err)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return []string{fmt.Sprintf("%s (a go run block): %v\n%s", b.where(), err, stderr.Bytes())}
	}
	want, ok := expectedOutput(b.block.lines)
	if ok && strings.TrimSpace(stdout.String()) != strings.TrimSpace(want) {
		return []string{fmt.Sprintf("%s (a go run block): it printed\n%s\nwhile its // Output: says\n%s", b.where(), stdout.String(), want)}
	}
	return nil
}

// expectedOutput returns the text of a block's "// Output:" comment.
func expectedOutput(lines []string) (string, bool) {
	for i, l := range lines {
		if strings.TrimSpace(l) != "// Output:" {
			continue
		}
		var out []string
		for _, l := range lines[i+1:] {
			t := strings.TrimSpace(l)
			if !strings.HasPrefix(t, "//") {
				break
			}
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(t, "//"), " "))
		}
		return strings.Join(out, "\n"), true
	}
	return "", false
}

// TestGoBlocks: every Go block of the README and docs/ compiles, under
// the rules above, and every "go run" block runs and prints its Output.
// checkExcerpt holds an excerpt block to its file: a Go file of the
// module that contains the block's lines word for word, in order.
func (c *blockChecker) checkExcerpt(b goBlock) []string {
	if b.run || b.pkg != "" || b.sig != defaultSignature {
		return []string{b.where() + ": an excerpt block takes no other marker clause and is not run"}
	}
	if !strings.HasSuffix(b.excerpt, ".go") || strings.Contains(b.excerpt, "..") || filepath.IsAbs(b.excerpt) {
		return []string{fmt.Sprintf("%s: excerpt %q: want a module-relative .go file", b.where(), b.excerpt)}
	}
	src, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(b.excerpt)))
	if err != nil {
		return []string{fmt.Sprintf("%s: excerpt %s: %v", b.where(), b.excerpt, err)}
	}
	if !strings.Contains(string(src), strings.Join(b.block.lines, "\n")+"\n") {
		first := ""
		for _, l := range b.block.lines {
			if strings.TrimSpace(l) != "" {
				first = strings.TrimSpace(l)
				break
			}
		}
		return []string{fmt.Sprintf("%s: the block starting %q is not in %s word for word: copy it from there again", b.where(), first, b.excerpt)}
	}
	return nil
}

func TestGoBlocks(t *testing.T) {
	t.Parallel()
	c := newBlockChecker(t)
	var blocks []goBlock
	for _, f := range markdownFiles(t, c.root) {
		bs, problems := goBlocks(readDoc(t, f))
		for _, p := range problems {
			t.Error(p)
		}
		blocks = append(blocks, bs...)
	}
	runs := 0
	for _, b := range blocks {
		problems := c.check(b)
		for _, p := range problems {
			t.Error(p)
		}
		if b.run && len(problems) == 0 {
			runs++
			for _, p := range c.runBlock(b) {
				t.Error(p)
			}
		}
	}
	t.Logf("%d Go blocks compiled, %d of them run", len(blocks), runs)

	t.Run("planted", func(t *testing.T) {
		readme := readDoc(t, "README.md")
		planted := newDoc(readme.path, strings.Replace(readme.text(), "res.LastPosition()", "res.LastPositon()", 1))
		bs, _ := goBlocks(planted)
		var problems []string
		for _, b := range bs {
			problems = append(problems, c.check(b)...)
		}
		line := 0
		for i, l := range planted.lines {
			if strings.Contains(l, "LastPositon") {
				line = i + 1
			}
		}
		requireReport(t, problems, fmt.Sprintf("README.md:%d:", line), "LastPositon")

		ex := newDoc("docs/planted.md", "<!-- go: excerpt decision/example_test.go -->\n```go\nconst MaxCoursesPerStudent = 6\n```\n")
		bs, _ = goBlocks(ex)
		requireReport(t, c.check(bs[0]), "docs/planted.md:3:", "is not in decision/example_test.go word for word")

		run := newDoc("docs/planted.md", "```go run\npackage main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"one\")\n\t// Output:\n\t// two\n}\n```\n")
		bs, _ = goBlocks(run)
		requireReport(t, c.runBlock(bs[0]), "docs/planted.md:2 (a go run block): it printed\none")
	})
}
