package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

var quarantineCommand = &command{
	name:    "quarantine",
	args:    []string{"ACTION"},
	maxArgs: 3,
	summary: "list, retry or skip the events projections and consumers set aside",
	usage:   "eventlite quarantine list [--name NAME]\neventlite quarantine retry NAME EVENT_ID\neventlite quarantine skip NAME EVENT_ID",
	about: `Quarantined events are events a projection's handler kept failing on
(reason handler_error), events whose data a projection or an external
consumer could not decode or interpret (uninterpretable, at the first
attempt), messages a consumer could not read as CloudEvents (undecodable),
or events that waited too long for a version gap: set aside with the
evidence for a person. NAME is the projection or consumer.
  list             the open entries (of NAME with --name): a table of NAME,
                   KIND, EVENT_ID, POSITION, STREAM, TYPE, ATTEMPTS,
                   LAST_FAILED and ERROR; with --json one object per line:
  {"name":"order_totals","kind":"projection","event_id":"01J...","position":"17","stream":"order-1",
   "type":"order.placed","reason":"handler_error","attempts":3,"error":"...","retry_requested":false,
   "first_failed":"2025-01-02T03:04:05.123456789Z","last_failed":"2025-01-02T03:04:05.123456789Z"}
  retry NAME EVENT_ID  mark the event for a retry once its cause is fixed.
                   This command cannot run a service's handlers: the
                   projection's runner applies it again on its next pass
                   (a projection stopped on the event: when its runner
                   restarts), a consumer when it next polls (natsjs.RunJetStream,
                   or Consumer.ApplyRetries). Failing again, it stays here
                   with one more attempt.
  skip NAME EVENT_ID   give the event up, for good: it is never applied. A
                   projection stopped on it goes on with the next event
                   when its runner restarts. An operator decision, logged.
An unknown NAME, or an EVENT_ID with no open entry for NAME, exits 5.`,
	new: func() runner { return &quarantineCmd{} },
}

type quarantineCmd struct {
	name string
}

func (q *quarantineCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&q.name, "name", "", "with list: only the entries of the projection or consumer `NAME`")
}

// quarantineOutput is one line of quarantine --json.
type quarantineOutput struct {
	Name           string `json:"name"`
	Kind           string `json:"kind"` // projection or consumer
	EventID        string `json:"event_id"`
	Position       string `json:"position"` // decimal; "0" for an outside event
	Stream         string `json:"stream"`
	Type           string `json:"type"`
	Reason         string `json:"reason"`
	Attempts       int    `json:"attempts"`
	Error          string `json:"error"`
	RetryRequested bool   `json:"retry_requested"`
	FirstFailed    string `json:"first_failed"` // RFC 3339, UTC
	LastFailed     string `json:"last_failed"`
}

func toQuarantineOutput(q projection.QuarantineEntry) quarantineOutput {
	return quarantineOutput{Name: q.Consumer, Kind: q.Kind, EventID: q.EventID, Position: strconv.FormatInt(q.Position, 10),
		Stream: q.Subject, Type: q.Type, Reason: string(q.Reason), Attempts: q.Attempts, Error: q.Error, RetryRequested: !q.RetryRequestedAt.IsZero(),
		FirstFailed: q.CreatedAt.UTC().Format(time.RFC3339Nano), LastFailed: q.LastFailedAt.UTC().Format(time.RFC3339Nano)}
}

func (q *quarantineCmd) run(ctx context.Context, c *cli, args []string) error {
	usage := func(format string, a ...any) error {
		return &usageError{cmd: quarantineCommand, err: fmt.Errorf("quarantine: "+format, a...)}
	}
	action := args[0]
	switch {
	case action != "list" && action != "retry" && action != "skip":
		return usage("unknown action %q: want list, retry or skip", action)
	case action == "list" && len(args) > 1:
		return usage("list takes no arguments (select with --name NAME)")
	case action != "list" && len(args) != 3:
		return usage("%s takes NAME and EVENT_ID", action)
	case action != "list" && q.name != "":
		return usage("--name goes with list")
	}
	name, id := q.name, ""
	if action != "list" {
		name, id = args[1], args[2]
	}
	var out []projection.QuarantineEntry
	open := func(fn func(*store.Store) error) error { return c.withStore(ctx, false, fn) }
	if action == "list" {
		open = func(fn func(*store.Store) error) error { return c.withReader(ctx, fn) }
	}
	err := open(func(s *store.Store) error {
		var err error
		switch action {
		case "list":
			out, err = projection.Quarantine(s).Open(ctx, name)
		case "retry":
			out, err = projection.Quarantine(s).Retry(ctx, name, id)
		default:
			out, err = projection.Quarantine(s).Skip(ctx, name, id)
		}
		return err
	})
	var nf *projection.QuarantineNotFoundError
	switch {
	case errors.Is(err, errNoDatabase) && name != "":
		return &exitError{code: exitNotFound, err: fmt.Errorf("no projection or consumer named %q: %w", name, err)}
	case errors.As(err, &nf):
		return &exitError{code: exitNotFound, err: fmt.Errorf("%w: list them with 'eventlite quarantine list' (and check --db)", err)}
	case err != nil:
		return err
	}
	if c.global.json {
		for _, e := range out {
			if err := writeJSON(c.stdout, toQuarantineOutput(e)); err != nil {
				return err
			}
		}
		return nil
	}
	switch action {
	case "list":
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		if len(out) == 0 {
			fmt.Fprintln(tw, "no quarantined events")
			return tw.Flush()
		}
		fmt.Fprintln(tw, "NAME\tKIND\tEVENT_ID\tPOSITION\tSTREAM\tTYPE\tATTEMPTS\tLAST_FAILED\tERROR")
		for _, e := range out {
			retry := ""
			if !e.RetryRequestedAt.IsZero() {
				retry = " (retry requested)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d%s\t%s\t%s\n", e.Consumer, e.Kind, printable(e.EventID), e.Position, printable(e.Subject),
				printable(e.Type), e.Attempts, retry, e.LastFailedAt.UTC().Format(time.RFC3339), oneLine(e.Error))
		}
		return tw.Flush()
	case "retry":
		_, err := fmt.Fprintf(c.stdout, "marked %s of %s for retry: %s applies it again on its next pass (a stopped projection: when its runner restarts)\n",
			printable(id), name, out[0].Kind)
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "skipped %s of %s: it will never be applied; the %s goes on without it\n", printable(id), name, out[0].Kind)
	return err
}
