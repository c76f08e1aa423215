package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/eventlite/eventlite/store"

	"github.com/eventlite/eventlite/store/outbox"
)

var dlqCommand = &command{
	name:    "dlq",
	args:    []string{"ACTION"},
	maxArgs: 2,
	summary: "list, retry or discard the relay's dead letters",
	usage:   "eventlite dlq list\neventlite dlq retry EVENT_ID | --all\neventlite dlq discard EVENT_ID",
	about: `Dead letters are events the relay gave up on: refused for good by the
destination, or failing past the bound of attempts. Each parks its stream:
the stream's later events wait until the dead letter is retried or
discarded. All act on the tenant's dead letters (--tenant).
  list             a table of EVENT_ID, STREAM, VERSION, POSITION, ATTEMPTS,
                   LAST_FAILED and ERROR; with --json one object per line:
  {"tenant":"default","event_id":"01J...","stream":"order-1","version":3,"position":"17","attempts":1,
   "error":"...","first_failed":"2025-01-02T03:04:05.123456789Z","last_failed":"2025-01-02T03:04:05.123456789Z"}
  retry EVENT_ID   re-queue the dead letter with the same event id (the
                   broker and consumers dedupe a copy that did arrive): the
                   relay publishes it, then its stream's waiting events, in
                   order. --all re-queues every dead letter of the tenant.
  discard EVENT_ID give the event up: it is never published, and its stream
                   goes on without it. An operator decision, logged.
An event id that is not a dead letter of the tenant exits 5.`,
	new: func() runner { return &dlqCmd{} },
}

type dlqCmd struct {
	all bool
}

func (d *dlqCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&d.all, "all", false, "with retry: re-queue every dead letter of the tenant")
}

// deadLetterOutput is one line of dlq --json.
type deadLetterOutput struct {
	Tenant      string `json:"tenant"`
	EventID     string `json:"event_id"`
	Stream      string `json:"stream"`
	Version     int64  `json:"version"`
	Position    string `json:"position"` // decimal: positions outgrow JSON's safe integers
	Attempts    int    `json:"attempts"`
	Error       string `json:"error"`
	FirstFailed string `json:"first_failed"` // RFC 3339, UTC
	LastFailed  string `json:"last_failed"`
}

func toOutput(d outbox.DeadLetter) deadLetterOutput {
	return deadLetterOutput{Tenant: d.Tenant, EventID: d.EventID, Stream: d.Stream, Version: d.Version,
		Position: strconv.FormatInt(d.Position, 10), Attempts: d.Attempts, Error: d.Error,
		FirstFailed: d.FirstFailed.UTC().Format(time.RFC3339Nano), LastFailed: d.LastFailed.UTC().Format(time.RFC3339Nano)}
}

func (d *dlqCmd) run(ctx context.Context, c *cli, args []string) error {
	usage := func(format string, a ...any) error {
		return &usageError{cmd: dlqCommand, err: fmt.Errorf("dlq: "+format, a...)}
	}
	action, id := args[0], ""
	if len(args) > 1 {
		id = args[1]
	}
	switch {
	case action != "list" && action != "retry" && action != "discard":
		return usage("unknown action %q: want list, retry or discard", action)
	case d.all && action != "retry":
		return usage("--all goes with retry")
	case action == "list" && id != "":
		return usage("list takes no event id")
	case action == "retry" && (id == "") == !d.all:
		return usage("retry takes an EVENT_ID or --all (one of the two)")
	case action == "discard" && id == "":
		return usage("discard takes an EVENT_ID")
	}
	tenant := string(c.global.tenant)
	var out []outbox.DeadLetter
	// list only reads; retry and discard write (and upgrade an older schema).
	open := func(fn func(*store.Store) error) error { return c.withStore(ctx, false, fn) }
	if action == "list" {
		open = func(fn func(*store.Store) error) error { return c.withReader(ctx, fn) }
	}
	err := open(func(s *store.Store) error {
		var err error
		switch {
		case action == "list":
			out, err = outbox.For(s).DeadLetters(ctx, tenant)
		case action == "retry" && d.all:
			out, err = outbox.For(s).RetryDeadLetters(ctx, tenant)
		case action == "retry":
			var dl outbox.DeadLetter
			dl, err = outbox.For(s).RetryDeadLetter(ctx, tenant, id)
			out = []outbox.DeadLetter{dl}
		default:
			var dl outbox.DeadLetter
			dl, err = outbox.For(s).DiscardDeadLetter(ctx, tenant, id)
			out = []outbox.DeadLetter{dl}
		}
		return err
	})
	var nf *outbox.DeadLetterNotFoundError
	switch {
	case errors.Is(err, errNoDatabase) && id != "":
		return &exitError{code: exitNotFound, err: fmt.Errorf("no dead letter with event id %q (tenant %s): %w", id, tenant, err)}
	case errors.As(err, &nf):
		return &exitError{code: exitNotFound, err: fmt.Errorf("%w: list them with 'eventlite dlq list' (and check --db and --tenant)", err)}
	case err != nil:
		return err
	}
	if c.global.json {
		for _, dl := range out {
			if err := writeJSON(c.stdout, toOutput(dl)); err != nil {
				return err
			}
		}
		return nil
	}
	switch action {
	case "list":
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		if len(out) == 0 {
			fmt.Fprintf(tw, "no dead letters (tenant %s)\n", tenant)
			return tw.Flush()
		}
		fmt.Fprintln(tw, "EVENT_ID\tSTREAM\tVERSION\tPOSITION\tATTEMPTS\tLAST_FAILED\tERROR")
		for _, dl := range out {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", dl.EventID, printable(dl.Stream), dl.Version, dl.Position, dl.Attempts,
				dl.LastFailed.UTC().Format(time.RFC3339), oneLine(dl.Error))
		}
		return tw.Flush()
	case "retry":
		if len(out) == 0 {
			_, err := fmt.Fprintf(c.stdout, "no dead letters to retry (tenant %s)\n", tenant)
			return err
		}
		for _, dl := range out {
			if _, err := fmt.Fprintf(c.stdout, "re-queued %s (stream %s, version %d): the relay publishes it and its stream's waiting events\n",
				dl.EventID, printable(dl.Stream), dl.Version); err != nil {
				return err
			}
		}
		return nil
	}
	dl := out[0]
	_, err = fmt.Fprintf(c.stdout, "discarded %s (stream %s, version %d): it will never be published; the stream goes on without it\n",
		dl.EventID, printable(dl.Stream), dl.Version)
	return err
}

// oneLine keeps an error message on its table row.
func oneLine(s string) string {
	q := strconv.Quote(s)
	if q[1:len(q)-1] == s {
		return s
	}
	return q
}
