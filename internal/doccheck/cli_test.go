package doccheck_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// cliHelp is what `eventlite help` and `eventlite help COMMAND` print:
// the commands, the global flags, and each command's flags.
type cliHelp struct {
	commands []string
	global   []string
	flags    map[string][]string
}

// helpList returns the first words of the lines of the part of text
// after header, up to a blank line.
func helpList(text, header string) []string {
	_, after, ok := strings.Cut(text, "\n"+header+"\n")
	if !ok && strings.HasPrefix(text, header+"\n") {
		after, ok = strings.TrimPrefix(text, header+"\n"), true
	}
	if !ok {
		return nil
	}
	var out []string
	for _, l := range strings.Split(after, "\n") {
		if strings.TrimSpace(l) == "" {
			break
		}
		if !strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "   ") {
			continue // a continuation line
		}
		out = append(out, strings.Fields(l)[0])
	}
	return out
}

// readHelp runs the CLI's help for the program and every command.
func readHelp(t *testing.T) cliHelp {
	t.Helper()
	main := help(t)
	h := cliHelp{commands: helpList(main, "Commands:"), global: helpList(main, "Global flags:"), flags: map[string][]string{}}
	if len(h.commands) == 0 || len(h.global) == 0 {
		t.Fatalf("eventlite help lists no commands or no global flags:\n%s", main)
	}
	for _, cmd := range h.commands {
		if cmd == "help" {
			continue
		}
		h.flags[cmd] = helpList(help(t, cmd), "Flags:")
	}
	return h
}

// flagRE finds the flags a text names.
var flagRE = regexp.MustCompile(`--[a-z0-9][a-z0-9-]*`)

// checkCLIReference reports every command the help lists that the
// page's Commands table has no row for, every flag a command's help
// prints that its rows do not name, every global flag missing from the
// Global flags table, and every row of a command, or flag in a row's
// synopsis, that the help does not have.
func checkCLIReference(d *doc, h cliHelp) []string {
	var problems []string
	lines, first, ok := d.section("Global flags")
	if !ok {
		return []string{d.path + `: no "## Global flags" section`}
	}
	var documented []string
	for _, r := range tableRows(lines, first) {
		documented = append(documented, flagRE.FindAllString(r.cells[0], -1)...)
	}
	for _, f := range h.global {
		if !slices.Contains(documented, f) {
			problems = append(problems, fmt.Sprintf("%s:%d: global flag %s (eventlite help) has no row in the Global flags table", d.path, first, f))
		}
	}
	for _, f := range documented {
		if !slices.Contains(h.global, f) {
			problems = append(problems, fmt.Sprintf("%s:%d: global flag %s is in the table but not in eventlite help's Global flags", d.path, first, f))
		}
	}

	lines, first, ok = d.section("Commands")
	if !ok {
		return append(problems, d.path+`: no "## Commands" section`)
	}
	rows := map[string][]tableRow{}
	for _, r := range tableRows(lines, first) {
		spans := codeSpans(r.cells[0])
		if len(spans) == 0 {
			problems = append(problems, fmt.Sprintf("%s: a command row must start with the command in backquotes, not %q", d.at(r.line), r.cells[0]))
			continue
		}
		name := strings.Fields(spans[0] + " ")[0]
		rows[name] = append(rows[name], r)
	}
	for _, cmd := range h.commands {
		rs, ok := rows[cmd]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s:%d: command %s (eventlite help) has no row in the Commands table", d.path, first, cmd))
			continue
		}
		var named []string
		var synopsis []string
		for _, r := range rs {
			for _, c := range r.cells {
				named = append(named, flagRE.FindAllString(c, -1)...)
			}
			synopsis = append(synopsis, flagRE.FindAllString(r.cells[0], -1)...)
		}
		for _, f := range h.flags[cmd] {
			if !slices.Contains(named, f) {
				problems = append(problems, fmt.Sprintf("%s: command %s: flag %s (eventlite help %s) is not in its row: add it to the synopsis and say what it does", d.at(rs[0].line), cmd, f, cmd))
			}
		}
		for _, f := range synopsis {
			if !slices.Contains(h.flags[cmd], f) && !slices.Contains(h.global, f) {
				problems = append(problems, fmt.Sprintf("%s: command %s: the row's synopsis names %s, which eventlite help %s does not print", d.at(rs[0].line), cmd, f, cmd))
			}
		}
	}
	for name, rs := range rows {
		if !slices.Contains(h.commands, name) {
			problems = append(problems, fmt.Sprintf("%s: command %s has a row but eventlite help lists no such command", d.at(rs[0].line), name))
		}
	}
	return problems
}

// TestCLIReference: docs/cli.md names every command `eventlite help`
// lists and every flag `eventlite help COMMAND` prints, and no command or
// synopsis flag the help does not have.
func TestCLIReference(t *testing.T) {
	t.Parallel()
	page := readDoc(t, "docs/cli.md")
	h := readHelp(t)
	for _, p := range checkCLIReference(page, h) {
		t.Error(p)
	}
	n := 0
	for _, fs := range h.flags {
		n += len(fs)
	}
	t.Logf("eventlite help: %d commands, %d global flags, %d command flags", len(h.commands), len(h.global), n)

	t.Run("planted", func(t *testing.T) {
		// A flag the help prints and the page forgets, a command the same.
		added := cliHelp{commands: append(slices.Clone(h.commands), "frobnicate"), global: h.global, flags: map[string][]string{}}
		for c, fs := range h.flags {
			added.flags[c] = fs
		}
		added.flags["append"] = append(slices.Clone(h.flags["append"]), "--frobnicate-level")
		problems := checkCLIReference(page, added)
		requireReport(t, problems, "docs/cli.md:", "command append: flag --frobnicate-level (eventlite help append) is not in its row")
		requireReport(t, problems, "docs/cli.md:", "command frobnicate (eventlite help) has no row")
		// A row whose synopsis names a flag the command does not have.
		planted := newDoc(page.path, strings.Replace(page.text(), "| `read STREAM [--from N]", "| `read STREAM [--since N] [--from N]", 1))
		requireReport(t, checkCLIReference(planted, h), "docs/cli.md:", "command read: the row's synopsis names --since")
	})
}
