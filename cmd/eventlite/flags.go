package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// newFlagSet returns a flag set that reports errors instead of printing
// or exiting: the caller prints the usage.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// writeFlags lists fs's flags under title, one per line, with the
// placeholder that the usage string names in backquotes. It reports
// whether there were any.
func writeFlags(b *strings.Builder, title string, fs *flag.FlagSet) bool {
	listed := false
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		if !listed {
			fmt.Fprintf(tw, "%s\n", title)
			listed = true
		}
		arg, usage := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		fmt.Fprintf(tw, "  --%s%s\t%s\n", f.Name, arg, usage)
	})
	_ = tw.Flush()
	return listed
}

// tenantFlag is --tenant: a tenant name as the store accepts it.
type tenantFlag string

func (t *tenantFlag) String() string { return string(*t) }

func (t *tenantFlag) Set(s string) error {
	if envelope.ValidateTenant(s) != nil {
		return errors.New("want 1-64 characters of A-Z a-z 0-9 . _ -")
	}
	*t = tenantFlag(s)
	return nil
}

// expectedFlag is --expected: any, no-stream, exists or a version number.
type expectedFlag struct {
	text     string
	expected store.Expected
}

func (e *expectedFlag) String() string {
	if e.text == "" {
		return "any"
	}
	return e.text
}

func (e *expectedFlag) Set(s string) error {
	x, err := store.ParseExpected(s)
	if v, ok := x.Version(); err != nil || (ok && v > envelope.MaxStreamVersion) {
		return fmt.Errorf("want any, no-stream, exists or a version number from 0 (meaning no-stream) to %d", envelope.MaxStreamVersion)
	}
	e.text, e.expected = s, x
	return nil
}

// countFlag is a whole number >= 0: a version, a position or a limit.
type countFlag int64

func (n *countFlag) String() string { return strconv.FormatInt(int64(*n), 10) }

func (n *countFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return errors.New("want a whole number >= 0")
	}
	*n = countFlag(v)
	return nil
}

// stringFlag is a string flag that remembers whether it was given.
type stringFlag struct {
	value string
	set   bool
}

func (f *stringFlag) String() string { return f.value }

func (f *stringFlag) Set(s string) error {
	f.value, f.set = s, true
	return nil
}

// listFlag is a repeatable string flag: each use adds one value.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// queryItem is the query of one item that --tag and --type name, the
// zero Query when neither is given.
func queryItem(tags, types listFlag) store.Query {
	if len(tags) == 0 && len(types) == 0 {
		return store.Query{}
	}
	return store.Query{Items: []store.QueryItem{{Types: types, Tags: tags}}}
}
