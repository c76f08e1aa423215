package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// defaultSource is the CloudEvents source of events made by the CLI: a
// relative URI-reference.
const defaultSource = "eventlite-cli"

var appendCommand = &command{
	name:    "append",
	args:    []string{"STREAM"},
	summary: "append an event, or the CloudEvents read from stdin, to a stream",
	usage: "eventlite append STREAM --type TYPE [--data JSON | --data @FILE] [--tag TAG]... [--expected E] [--id ID] [--source URI] [--erasure-key SUBJECT]\n" +
		"          [--if-tag TAG]... [--if-type TYPE]... [--if-after POSITION]\n" +
		"eventlite append STREAM [--tag TAG]... [--expected E] [--erasure-key SUBJECT] [--if-tag TAG]... < events.json",
	about: `Appends one event built from the flags, or, without --type, the CloudEvents
read from stdin as one atomic batch: structured JSON events and JSON batch
arrays, separated by any white space (pretty-printed input is fine). Their
subject and tenant, when present, must be STREAM and --tenant; their
position and streamversion are replaced by the store's; their id and time
are kept. So "eventlite read S | eventlite append S --db other.db" copies a
stream. Appending events that are already stored (same ids, type and data,
as the stream's newest events) is a retry: it prints the first result.
Stdin holds at most 64 MiB: past that, append stops reading and exits 4.

Refused as invalid input (exit 4), storing nothing: control characters or
leading/trailing white space in an attribute, invalid UTF-8 or a lone
surrogate (\ud800) in an attribute or in data, an attribute given twice in
one event, data nested deeper than 1000 levels, an event over 1 MiB - 8 KiB
(data plus headers), and a type starting with "eventlite.". An empty
--expected= is a usage error (exit 2).

An event carrying the erasurekey extension (--erasure-key SUBJECT sets it
on every event appended) has its data encrypted with SUBJECT's data key
(see "eventlite help forget"); without a master key (--master-key-file or
$EVENTLITE_MASTER_KEY_FILE) it is refused (exit 4), never stored in clear.
The data limit applies to the plaintext.

--tag TAG (repeatable) tags every event appended, after the tags it
carries (stdin events carry theirs in the eventlitetags extension). A tag
is 1-255 bytes of UTF-8 without control characters or white space at
either end, at most 32 per event, none twice; any other is refused (exit
4, nothing stored). Tags are kept byte for byte in the order given.

--if-tag TAG and --if-type TYPE (repeatable) make the append conditional:
it fails, storing nothing, when an event of the tenant carrying every
--if-tag tag (and of one of the --if-type types, when given) has a
position after --if-after POSITION (default 0: any such event). That
failure exits 3 and names the first such event's position; when
--expected fails too, the version conflict is reported. A retry of a
stored append prints its first result, whatever the condition says.
"tail --tag T --type Y" reads the events a condition looks at; pass the
position the decision read up to as --if-after.

Prints what was appended: the stream's new version and the events' global
positions; with --json, one object:
  {"tenant":"default","stream":"order-1","version":3,"first_position":"17","last_position":"17"}`,
	new: func() runner { return &appendCmd{} },
}

type appendCmd struct {
	typ, data, id, source stringFlag
	erasureKey            stringFlag
	expected              expectedFlag
	tags, ifTags, ifTypes listFlag
	ifAfter               countFlag
	ifAfterSet            bool
}

func (a *appendCmd) flags(fs *flag.FlagSet) {
	fs.Var(&a.typ, "type", "the event `TYPE`; without --type, append reads CloudEvents from stdin")
	fs.Var(&a.data, "data", "the event's data: `JSON`, or @FILE to read it from a file (default: no data)")
	fs.Var(&a.expected, "expected", "append only if the stream is at version `E`: any (default), no-stream, exists, or a number (0 means no-stream); an empty value is refused")
	fs.Var(&a.id, "id", "the event `ID` (default: a new ULID); the same id, type and data again is a retry")
	fs.Var(&a.erasureKey, "erasure-key", "encrypt the events' data with the data key of `SUBJECT` (sets the erasurekey extension; needs --master-key-file)")
	fs.Var(&a.source, "source", "the event source, a `URI`-reference (default \""+defaultSource+"\")")
	fs.Var(&a.tags, "tag", "tag every event appended with `TAG` (repeatable)")
	fs.Var(&a.ifTags, "if-tag", "append only if no event carrying `TAG` (every --if-tag) is after --if-after (repeatable)")
	fs.Var(&a.ifTypes, "if-type", "with --if-tag: only events of one of these `TYPE`s count (repeatable; alone: any event of the types)")
	fs.Func("if-after", "the `POSITION` the condition counts events after (default 0: any)", func(s string) error {
		a.ifAfterSet = true
		return a.ifAfter.Set(s)
	})
}

func (a *appendCmd) run(ctx context.Context, c *cli, args []string) error {
	stream := args[0]
	var (
		events []envelope.Event
		err    error
	)
	if a.typ.set {
		events, err = a.fromFlags()
	} else {
		events, err = a.fromStdin(ctx, c, stream)
	}
	if err != nil {
		return err
	}
	if a.erasureKey.set {
		for i := range events {
			events[i] = events[i].WithErasureKey(a.erasureKey.value)
		}
	}
	if len(a.tags) > 0 {
		for i := range events {
			events[i].Tags = append(slices.Clip(events[i].Tags), a.tags...)
		}
	}
	expected := a.expected.expected
	if q := queryItem(a.ifTags, a.ifTypes); !q.All() {
		expected = expected.If(store.Condition{Query: q, After: int64(a.ifAfter)})
	} else if a.ifAfterSet {
		return &usageError{cmd: appendCommand, err: errors.New("--if-after needs --if-tag or --if-type: they name the events the condition counts")}
	}
	var res store.AppendResult
	err = c.withStore(ctx, true, func(s *store.Store) error {
		var err error
		res, err = s.Append(ctx, string(c.global.tenant), stream, expected, events...)
		if errors.Is(err, context.Canceled) {
			again := "run the same command again"
			if a.typ.set && !a.id.set {
				again = "run it again with --id " + events[0].ID
			}
			return &interruptedError{
				msg: "interrupted before the store confirmed the append, which may still have been stored: " +
					again + " to find out (a retry prints the first result)",
				err: err,
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return printAppend(c, res)
}

// fromFlags builds the event that --type, --data, --id and --source
// describe. The id is chosen here, not by the store, so that an
// interrupted append can be retried.
func (a *appendCmd) fromFlags() ([]envelope.Event, error) {
	e := envelope.Event{
		ID:              a.id.value,
		Source:          defaultSource,
		Type:            a.typ.value,
		DataContentType: envelope.DefaultContentType,
	}
	if a.id.set && a.id.value == "" {
		return nil, &envelope.InvalidError{Index: -1, Field: "id", Reason: "empty: omit --id to get a new ULID"}
	}
	if !a.id.set {
		e.ID = ulid.Make().String()
	}
	if a.source.set {
		e.Source = a.source.value
	}
	if a.data.set {
		e.Data = []byte(a.data.value)
		if name, ok := strings.CutPrefix(a.data.value, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return nil, &envelope.InvalidError{Index: -1, Field: "data", Reason: fmt.Sprintf("cannot read --data @%s: %v", name, err)}
			}
			e.Data = b
		}
	}
	return []envelope.Event{e}, nil
}

// fromStdin decodes the CloudEvents on stdin and checks that they belong
// to the stream and tenant appended to.
func (a *appendCmd) fromStdin(ctx context.Context, c *cli, stream string) ([]envelope.Event, error) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"data", a.data.set}, {"id", a.id.set}, {"source", a.source.set}} {
		if f.set {
			return nil, &usageError{cmd: appendCommand, err: fmt.Errorf("--%s needs --type: without --type, append reads whole CloudEvents from stdin", f.name)}
		}
	}
	if f, ok := c.stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintln(c.stderr, "eventlite: reading CloudEvents from stdin; end with Ctrl-D (or pass --type to append one event built from flags)")
		}
	}
	in, err := readInput(ctx, c.stdin, maxStdinBytes)
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	events, err := envelope.DecodeSequence(bytes.NewReader(in), 0)
	if err != nil {
		return nil, fmt.Errorf("stdin: %w", err)
	}
	if len(events) == 0 {
		return nil, &envelope.InvalidError{Index: -1, Field: "stdin", Reason: "nothing to append: no CloudEvents on stdin (pass --type to append one event built from flags)"}
	}
	tenant := string(c.global.tenant)
	for i, e := range events {
		if e.Stream != "" && e.Stream != stream {
			return nil, &envelope.InvalidError{Index: i, Field: "subject", Reason: fmt.Sprintf("%q differs from the stream %q appended to: append to %s, or remove the subject", e.Stream, stream, printable(e.Stream))}
		}
		if e.Tenant != "" && e.Tenant != tenant {
			return nil, &envelope.InvalidError{Index: i, Field: "tenant", Reason: fmt.Sprintf("%q differs from the tenant %q appended to: pass --tenant %s, or remove the tenant attribute", e.Tenant, tenant, e.Tenant)}
		}
	}
	return events, nil
}

// maxStdinBytes bounds what append reads from stdin: a batch is one
// transaction, decoded whole in memory.
const maxStdinBytes = 64 << 20

// readInput reads r to its end, or until ctx ends. Input longer than max
// bytes is refused with a *envelope.TooLargeError for "stdin" as soon as
// the bound is passed, so memory stays bounded whatever the input. A read
// from a terminal or a pipe cannot be interrupted, so it runs in a
// goroutine of its own, which ends with the input (at the latest when the
// process exits).
func readInput(ctx context.Context, r io.Reader, max int) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
		if err == nil && len(b) > max {
			b, err = nil, &envelope.TooLargeError{Index: -1, Field: "stdin", Size: len(b), Limit: max}
		}
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// appendOutput is append's --json output. Positions are decimal strings,
// as in the CloudEvents output; the version is a number.
type appendOutput struct {
	Tenant        string `json:"tenant"`
	Stream        string `json:"stream"`
	Version       int64  `json:"version"`
	FirstPosition int64  `json:"first_position,string"`
	LastPosition  int64  `json:"last_position,string"`
}

func printAppend(c *cli, res store.AppendResult) error {
	if c.global.json {
		return writeJSON(c.stdout, appendOutput{
			Tenant:        res.Tenant,
			Stream:        res.Stream,
			Version:       res.Version,
			FirstPosition: res.FirstPosition(),
			LastPosition:  res.LastPosition(),
		})
	}
	n := len(res.Events)
	what := "1 event"
	positions := fmt.Sprintf("position %d", res.FirstPosition())
	if n != 1 {
		what = fmt.Sprintf("%d events", n)
		positions = fmt.Sprintf("positions %d-%d", res.FirstPosition(), res.LastPosition())
	}
	tenant := ""
	if res.Tenant != "default" {
		tenant = " (tenant " + res.Tenant + ")"
	}
	_, err := fmt.Fprintf(c.stdout, "appended %s to %s%s: version %d, %s\n", what, printable(res.Stream), tenant, res.Version, positions)
	return err
}

// writeJSON writes v as one line of JSON, without escaping <, > and &.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
