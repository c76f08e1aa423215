package doccheck_test

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxReadmeLines is the README's length bound: it starts a user; the
// rest lives in docs/.
const maxReadmeLines = 220

// The README's first two commands, which must stay true.
var readmeFirstCommands = []string{"go run ./cmd/eventlite demo", "go test ./..."}

// checkReadme reports a README longer than maxReadmeLines, and one whose
// first code block does not start with the two commands.
func checkReadme(d *doc) []string {
	var problems []string
	if n := len(d.lines); n > maxReadmeLines {
		problems = append(problems, fmt.Sprintf("%s: %d lines, more than %d: move the detail to a page of docs/ and link it", d.path, n, maxReadmeLines))
	}
	blocks := d.blocks()
	if len(blocks) == 0 {
		return append(problems, d.path+": no code block: the first must hold "+strings.Join(readmeFirstCommands, " and "))
	}
	var cmds []string
	for _, l := range blocks[0].lines {
		cmd, _, _ := strings.Cut(l, "#")
		if cmd = strings.Join(strings.Fields(cmd), " "); cmd != "" {
			cmds = append(cmds, cmd)
		}
	}
	for i, want := range readmeFirstCommands {
		if i >= len(cmds) || cmds[i] != want {
			got := "nothing"
			if i < len(cmds) {
				got = fmt.Sprintf("%q", cmds[i])
			}
			problems = append(problems, fmt.Sprintf("%s: command %d of the first code block is %s, want %q", d.at(blocks[0].line), i+1, got, want))
		}
	}
	return problems
}

// TestReadme: the README is at most 220 lines and opens with the two
// commands; `go test ./...` is this run, and the demo is a command that
// `eventlite help` lists (TestCLIReference checks its row).
func TestReadme(t *testing.T) {
	t.Parallel()
	readme := readDoc(t, "README.md")
	for _, p := range checkReadme(readme) {
		t.Error(p)
	}

	t.Run("planted", func(t *testing.T) {
		long := newDoc("README.md", readme.text()+strings.Repeat("more\n", maxReadmeLines))
		requireReport(t, checkReadme(long), "README.md: ", "more than 220")
		swapped := newDoc("README.md", strings.Replace(readme.text(), "go run ./cmd/eventlite demo", "go run ./cmd/eventlite demos", 1))
		requireReport(t, checkReadme(swapped), `want "go run ./cmd/eventlite demo"`)
	})
}

// requireReport fails unless one problem contains every part: the
// checker caught the planted mistake and said where.
func requireReport(t *testing.T, problems []string, parts ...string) {
	t.Helper()
	for _, p := range problems {
		all := true
		for _, part := range parts {
			all = all && strings.Contains(p, part)
		}
		if all {
			t.Logf("reported, as it must be: %s", p)
			return
		}
	}
	t.Errorf("the planted mistake was not reported (want a problem containing %q); reported:\n%s", parts, strings.Join(problems, "\n"))
}

// markdownFiles returns the module's Markdown files, relative to root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			r, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(r))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// checkLinks reports every link of d (outside code) to a file that does
// not exist, to a heading that the target does not have, and to a place
// outside the repository or up from the page's folder. read returns another document by its
// module-relative path (nil when there is none); exists says whether a
// module-relative path names a file or directory.
func checkLinks(d *doc, read func(string) *doc, exists func(string) bool) []string {
	var problems []string
	code := d.inCode()
	for i, l := range d.lines {
		if code[i] {
			continue
		}
		spans := codeSpanRE.FindAllStringIndex(l, -1)
		for _, m := range mdLinkRE.FindAllStringSubmatchIndex(l, -1) {
			if insideSpan(m[0], spans) {
				continue
			}
			target := l[m[4]:m[5]]
			where := d.at(i + 1)
			if schemeRE.MatchString(target) {
				problems = append(problems, fmt.Sprintf("%s: link to %s: docs link only inside the repository", where, target))
				continue
			}
			if strings.HasPrefix(target, "../") {
				// A page links down from its own folder only: a link up
				// reads as leaving the repository wherever the page is
				// shown on its own. Name the file in a code span instead.
				problems = append(problems, fmt.Sprintf("%s: link %q goes up a folder: name the file as text (`%s`) instead", where, target, strings.TrimPrefix(path.Clean(path.Join(path.Dir(d.path), target)), "./")))
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			targetPath := d.path
			if file != "" {
				targetPath = path.Clean(path.Join(path.Dir(d.path), file))
				if strings.HasPrefix(targetPath, "../") || !exists(targetPath) {
					problems = append(problems, fmt.Sprintf("%s: link %q: no file %s", where, target, targetPath))
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(targetPath, ".md") {
				continue
			}
			td := d
			if targetPath != d.path {
				td = read(targetPath)
			}
			if td == nil {
				problems = append(problems, fmt.Sprintf("%s: link %q: cannot read %s", where, target, targetPath))
				continue
			}
			if !td.anchors()[anchor] {
				problems = append(problems, fmt.Sprintf("%s: link %q: %s has no heading with the anchor #%s", where, target, targetPath, anchor))
			}
		}
	}
	return problems
}

func insideSpan(at int, spans [][]int) bool {
	for _, s := range spans {
		if at > s[0] && at < s[1] {
			return true
		}
	}
	return false
}

// TestLinks: every relative link of every Markdown file resolves, its
// #anchor included, and none leaves the repository.
func TestLinks(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	docs := map[string]*doc{}
	read := func(rel string) *doc {
		if d, ok := docs[rel]; ok {
			return d
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil
		}
		docs[rel] = newDoc(rel, string(b))
		return docs[rel]
	}
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		return err == nil
	}
	files := markdownFiles(t, root)
	for _, f := range files {
		for _, p := range checkLinks(read(f), read, exists) {
			t.Error(p)
		}
	}
	t.Logf("checked the links of %d Markdown files", len(files))

	t.Run("planted", func(t *testing.T) {
		readme := read("README.md")
		planted := newDoc("README.md", readme.text()+
			"\nSee [the guide](docs/guide.md), [errors](docs/errors.md#no-such-heading) and [the web](https://example.com/).\n")
		problems := checkLinks(planted, read, exists)
		requireReport(t, problems, "README.md:", "no file docs/guide.md")
		requireReport(t, problems, "README.md:", "docs/errors.md has no heading with the anchor #no-such-heading")
		requireReport(t, problems, "README.md:", "https://example.com/", "only inside the repository")
		up := newDoc("docs/planted.md", "See [the README](../README.md).\n")
		requireReport(t, checkLinks(up, read, exists), "docs/planted.md:1:", "goes up a folder")
	})
}
