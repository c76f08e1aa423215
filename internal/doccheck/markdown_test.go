// Package doccheck_test checks the README and docs/ against the code, so
// that they cannot drift: the README's length and first commands, every
// relative link and anchor, every Go block (it compiles; a `go run` block
// also runs), docs/design.md's package table against `go list`,
// docs/errors.md against the exported errors of every package (go/types),
// the exit codes of docs/errors.md against the CLI's constants and help,
// and docs/cli.md against every command and flag the help prints. Each
// checker also runs on a copy of its page with a planted mistake, and must
// report it. The rules are docs/testing.md's "The docs are tested too".
package doccheck_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// doc is one Markdown file: its path relative to the module root (as
// messages name it) and its lines.
type doc struct {
	path  string
	lines []string
}

func newDoc(path, text string) *doc {
	return &doc{path: path, lines: strings.Split(strings.TrimSuffix(text, "\n"), "\n")}
}

// readDoc reads the module-relative path.
func readDoc(t *testing.T, rel string) *doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return newDoc(rel, string(b))
}

// text is the document again, lines joined.
func (d *doc) text() string { return strings.Join(d.lines, "\n") + "\n" }

// at names a line for a message: "docs/cli.md:12".
func (d *doc) at(line int) string { return fmt.Sprintf("%s:%d", d.path, line) }

// codeBlock is a fenced block: its info string, its lines, and the line
// number (1-based) of its first content line.
type codeBlock struct {
	info  string
	lines []string
	line  int
}

// blocks returns the fenced code blocks (``` or ~~~ fences).
func (d *doc) blocks() []codeBlock {
	var out []codeBlock
	var cur *codeBlock
	fence := ""
	for i, l := range d.lines {
		trimmed := strings.TrimLeft(l, " ")
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence = trimmed[:3]
				cur = &codeBlock{info: strings.TrimSpace(trimmed[3:]), line: i + 2}
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.lines = append(cur.lines, l)
	}
	return out
}

// inCode reports, per line, whether it is inside a fenced block (fences
// included).
func (d *doc) inCode() []bool {
	in := make([]bool, len(d.lines))
	open, fence := false, ""
	for i, l := range d.lines {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case !open && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			open, fence = true, trimmed[:3]
			in[i] = true
		case open:
			in[i] = true
			if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
				open = false
			}
		}
	}
	return in
}

// section returns the lines (with their 1-based numbers) under the
// heading whose text is title, up to the next heading of the same or a
// higher level; ok is false when there is no such heading.
func (d *doc) section(title string) (lines []string, first int, ok bool) {
	code := d.inCode()
	level := 0
	for i, l := range d.lines {
		if code[i] {
			continue
		}
		lv, text := heading(l)
		if level == 0 {
			if lv > 0 && text == title {
				level, first = lv, i+2
			}
			continue
		}
		if lv > 0 && lv <= level {
			return d.lines[first-1 : i], first, true
		}
	}
	if level == 0 {
		return nil, 0, false
	}
	return d.lines[first-1:], first, true
}

var headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// heading returns a line's heading level and text, or 0.
func heading(l string) (int, string) {
	m := headingRE.FindStringSubmatch(l)
	if m == nil {
		return 0, ""
	}
	return len(m[1]), m[2]
}

// tableRow is one row of a Markdown table: its cells, trimmed, and its
// line number.
type tableRow struct {
	cells []string
	line  int
}

// tableRows returns the body rows of the tables in lines (header and
// delimiter rows left out); first is the line number of lines[0].
func tableRows(lines []string, first int) []tableRow {
	var rows []tableRow
	inTable := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "|") {
			inTable = false
			continue
		}
		if !inTable {
			inTable = true // the header row
			continue
		}
		cells := splitRow(t)
		if isDelimiterRow(cells) {
			continue
		}
		rows = append(rows, tableRow{cells: cells, line: first + i})
	}
	return rows
}

// splitRow splits "| a | b |" into its cells; a pipe escaped as \| or
// inside a code span stays in its cell.
func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	var cells []string
	var cur strings.Builder
	inCode := false
	for i := 0; i < len(row); i++ {
		c := row[i]
		switch {
		case c == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '`':
			inCode = !inCode
			cur.WriteByte(c)
		case c == '|' && !inCode:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		cells = append(cells, s)
	}
	return cells
}

func isDelimiterRow(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" {
			return false
		}
	}
	return len(cells) > 0
}

var codeSpanRE = regexp.MustCompile("`([^`]*)`")

// codeSpans returns the contents of a text's code spans.
func codeSpans(s string) []string {
	var out []string
	for _, m := range codeSpanRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// plain is a cell's text as a terminal prints it: code spans, emphasis
// and links reduced to their text, white space collapsed.
func plain(s string) string {
	s = mdLinkRE.ReplaceAllString(s, "$1")
	s = strings.NewReplacer("`", "", "**", "", "\\|", "|").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

var mdLinkRE = regexp.MustCompile(`!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)

// anchors returns the anchors GitHub gives a document's headings (and
// any <a id/name> it declares).
func (d *doc) anchors() map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	code := d.inCode()
	for i, l := range d.lines {
		if code[i] {
			continue
		}
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		lv, text := heading(l)
		if lv == 0 {
			continue
		}
		a := slug(text)
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

var htmlAnchorRE = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)

// slug is GitHub's anchor of a heading: lowercase, punctuation dropped
// (hyphens and underscores kept), spaces as hyphens.
func slug(heading string) string {
	heading = mdLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case unicode.IsLetter(r), unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
