package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/metrics"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
)

var relayCommand = &command{
	name:    "relay",
	summary: "publish the outbox to NATS JetStream, an HTTP sink or stdout",
	usage: "eventlite relay --to nats://HOST:PORT[?stream=NAME&subject=TEMPLATE] | http(s)://URL | stdout\n" +
		"                [--once] [--timeout D] [--create-stream] [--mode binary|structured]\n" +
		"                [--metrics ADDR [--allow-host NAME]...]",
	about: `Publishes every event of the outbox (all tenants) at least once, each
stream in order, to one destination:
  nats://HOST:PORT   NATS JetStream, CloudEvents binary mode, message id
                     <tenant>:<event id>. ?stream=NAME (default EVENTLITE)
                     and ?subject=TEMPLATE (default eventlite.{tenant}.{type};
                     placeholders {tenant}, {type}, {stream}, one per token;
                     in their values each byte of '.', '*', '>', '_', white
                     space, a control character or invalid UTF-8 becomes
                     '_' and two uppercase hex digits, so values never
                     share a subject: order.placed is order_2Eplaced, an
                     empty value '_'). An event whose subject is longer
                     than the server reads (max_control_line, 4096 bytes)
                     becomes a dead letter.
                     --create-stream creates a missing stream (file storage,
                     subjects: the template's fixed prefix + '>', a 10 minute
                     duplicate window); without it a missing stream exits 5.
                     A server that does not answer at start does not stop
                     the relay: it logs a warning with the URL and the
                     cause and retries with backoff until the server
                     answers (doctor's outbox_stale shows what waits). A
                     Go program catches a wrong URL at start with
                     natsjs.Options.RequireConnect.
  http(s)://URL      a CloudEvents HTTP sink, binary mode (or --mode
                     structured); 2xx is success.
  stdout             JSON Lines, one structured CloudEvent per line; logs go to
                     stderr. It consumes the outbox: to watch events without
                     consuming them, use 'tail --follow'.
One relay at a time holds the store's relay lease; others stand by and
take over. It runs until interrupted (SIGINT or SIGTERM: it stops within
2 s, the batch in flight stays pending) and exits 0. With --once it drains
the outbox and exits 0 when every row was published or dead-lettered, and
6, saying how many rows are left and why, when rows remain after --timeout
or wait behind dead letters (see 'eventlite dlq'); an interrupted --once
run exits 6. An unreachable destination is retried with backoff for as
long as it takes; an event that keeps failing, or that the destination
refuses for good, becomes a dead letter that parks its stream. A sink
that drops the connection or does not answer for one event is that
event's failure unless every request of the round failed and the sink
does not answer a ping; other streams go on meanwhile, each round waiting
at most one request timeout for it. An event that the destination's
encoding cannot carry exactly (a control character in an HTTP header,
invalid UTF-8 in JSON) is a dead letter at its first attempt.
A malformed --to exits 2 before the database is opened.
With --metrics HOST:PORT (such as 127.0.0.1:9464; port 0 picks a free
one, logged) it serves Prometheus metrics at http://HOST:PORT/metrics
while it runs, read from the store on each scrape: the log head
(eventlite_log_head_position, eventlite_events_appended_total), the
outbox (eventlite_outbox_*: pending, oldest unpublished age, dead letters,
parked streams and totals), this relay's counters and since when its
destination is unreachable (eventlite_relay_*),
each projection's checkpoint, lag and status (eventlite_projection_*),
quarantined and deferred events, version conflicts and effects by state
(package metrics), beside the Go runtime's and the process's metrics.
An address it cannot listen on exits 1 before the relay starts. It answers
only requests whose Host is localhost, an IP address or a name given with
--allow-host NAME (repeatable), whatever the port; any other Host gets 403
host-not-allowed (against DNS rebinding; see docs/http.md).`,
	new: func() runner { return &relayCmd{timeout: 30 * time.Second, mode: "binary"} },
}

type relayCmd struct {
	to           string
	once         bool
	timeout      time.Duration
	createStream bool
	mode         string
	metrics      metricsAddr
	allowHosts   []string
	set          map[string]bool // flags given
	visit        *flag.FlagSet
}

func (r *relayCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&r.to, "to", "", "publish to `DEST`: nats://HOST:PORT[?stream=NAME&subject=TEMPLATE], http(s)://URL or stdout")
	fs.BoolVar(&r.once, "once", false, "drain the outbox and exit instead of running until interrupted")
	fs.DurationVar(&r.timeout, "timeout", r.timeout, "with --once, bound the whole run to `D`")
	fs.BoolVar(&r.createStream, "create-stream", false, "create the JetStream stream when it is missing (nats only)")
	fs.Func("mode", "the HTTP content `MODE`: binary or structured (default binary)", func(s string) error {
		if s != "binary" && s != "structured" {
			return errors.New("want binary or structured")
		}
		r.mode = s
		return nil
	})
	fs.Var(&r.metrics, "metrics", "serve Prometheus metrics at http://`ADDR`/metrics (HOST:PORT, such as 127.0.0.1:9464)")
	allowHostFlag(fs, &r.allowHosts)
	r.set = map[string]bool{}
	r.visit = fs
}

func (r *relayCmd) run(ctx context.Context, c *cli, _ []string) error {
	r.visit.Visit(func(f *flag.Flag) { r.set[f.Name] = true })
	usage := func(format string, args ...any) error {
		return &usageError{cmd: relayCommand, err: fmt.Errorf("relay: "+format, args...)}
	}
	kind := ""
	switch {
	case r.to == "":
		return usage("--to is required")
	case r.to == "stdout":
		kind = "stdout"
	case strings.HasPrefix(r.to, "nats://"):
		kind = "nats"
	case strings.HasPrefix(r.to, "http://"), strings.HasPrefix(r.to, "https://"):
		kind = "http"
	default:
		return usage("--to %q: want nats://HOST:PORT, http(s)://URL or stdout", r.to)
	}
	switch {
	case r.set["create-stream"] && kind != "nats":
		return usage("--create-stream applies to a nats:// destination")
	case r.set["mode"] && kind != "http":
		return usage("--mode applies to an http(s):// destination")
	case r.set["timeout"] && !r.once:
		return usage("--timeout bounds a --once run")
	case r.timeout <= 0:
		return usage("--timeout must be positive")
	}
	// The destination is checked before the database is opened: a
	// malformed one creates no file.
	var (
		natsOpts natsjs.Options
		httpPub  *publish.HTTP
		err      error
	)
	switch kind {
	case "nats":
		if natsOpts, err = natsjs.ParseURL(r.to); err != nil {
			return usage("%v", err)
		}
	case "http":
		if httpPub, err = publish.NewHTTP(publish.HTTPOptions{URL: r.to, Structured: r.mode == "structured", Logger: c.log}); err != nil {
			return usage("%v", err)
		}
	}
	// A relay logs what it does: info by default, unless told otherwise.
	if c.getenv("EVENTLITE_LOG") == "" && !c.global.verbose {
		c.log.SetLevel(hclog.Info)
	}
	if r.once {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	// Running until interrupted, it may wait for the first append, so it
	// creates the database; a drain of a missing database has nothing to do.
	err = c.withStore(ctx, !r.once, func(s *store.Store) error {
		if err := requireMasterKey(ctx, s, "relay"); err != nil {
			return err
		}
		var (
			pub publish.Publisher
			err error
		)
		switch kind {
		case "stdout":
			pub = publish.NewStdout(c.stdout)
		case "nats":
			natsOpts.CreateStream = r.createStream
			natsOpts.Logger = c.log
			pub, err = natsjs.NewPublisher(ctx, natsOpts)
		case "http":
			pub = httpPub
		}
		if err != nil {
			return r.failed(ctx, err)
		}
		defer pub.Close()
		rl, err := publish.New(publish.Options{Store: s, Publisher: pub, Once: r.once, Logger: c.log})
		if err != nil {
			return err
		}
		if r.metrics != "" {
			reg, err := metrics.NewRegistry(s, &metrics.Options{Relay: rl}) // with the relay's counters
			if err != nil {
				return err
			}
			ms, err := serveMetrics(string(r.metrics), r.allowHosts, reg, c.log)
			if err != nil {
				return err
			}
			defer ms.Close()
			c.log.Info("serving metrics", "url", "http://"+ms.Addr().String()+"/metrics")
		}
		return r.failed(ctx, rl.Run(ctx))
	})
	if errors.Is(err, errNoDatabase) {
		c.log.Warn("nothing to publish", "error", err)
		return nil
	}
	return err
}

// failed maps the relay's end to the CLI's errors: rows left is exit 6,
// a missing JetStream stream exit 5.
func (r *relayCmd) failed(ctx context.Context, err error) error {
	var inc *publish.IncompleteError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &inc):
		msg := inc.Error()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			msg = fmt.Sprintf("%s (after --timeout %s)", msg, r.timeout)
		case errors.Is(err, context.Canceled):
			msg += ": run it again"
		}
		return &interruptedError{msg: msg, err: err}
	case ctx.Err() != nil && r.once:
		return &interruptedError{msg: "relay: stopped before it started: " + err.Error(), err: err}
	case ctx.Err() != nil:
		return nil // interrupted while starting: nothing was left half done
	case errors.Is(err, natsjs.ErrNoStream):
		return &exitError{code: exitNotFound, err: err}
	}
	return err
}
