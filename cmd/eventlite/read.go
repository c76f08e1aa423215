package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

var readCommand = &command{
	name:    "read",
	args:    []string{"STREAM"},
	summary: "print a stream's events as CloudEvents JSON Lines",
	usage:   "eventlite read STREAM [--from VERSION] [--backward] [--limit N]",
	about: `Prints the events of one stream of the tenant, one structured CloudEvent
JSON per line, in version order (newest first with --backward). Positions
are decimal strings, times are UTC. Reading a stream that does not exist
exits 5.`,
	new: func() runner { return &readCmd{} },
}

type readCmd struct {
	from, limit countFlag
	backward    bool
}

func (r *readCmd) flags(fs *flag.FlagSet) {
	fs.Var(&r.from, "from", "start at stream version `VERSION`, inclusive (default: the first, or the newest with --backward)")
	fs.BoolVar(&r.backward, "backward", false, "read from the newest event towards the first")
	fs.Var(&r.limit, "limit", "print at most `N` events (default 0: all)")
}

func (r *readCmd) run(ctx context.Context, c *cli, args []string) error {
	stream := args[0]
	w := newEventWriter(c.stdout)
	err := c.withReader(ctx, func(s *store.Store) error {
		opts := store.ReadStreamOptions{From: int64(r.from), Backward: r.backward, Limit: int(r.limit)}
		for e, err := range s.ReadStream(ctx, string(c.global.tenant), stream, opts) {
			if err != nil {
				return errors.Join(err, w.flush())
			}
			if err := w.write(&e); err != nil {
				return err
			}
		}
		return w.flush()
	})
	if errors.Is(err, errNoDatabase) {
		return fmt.Errorf("stream %q (tenant %s): %w (%w)", stream, c.global.tenant, store.ErrNotFound, err)
	}
	return err
}

var tailCommand = &command{
	name:    "tail",
	summary: "print the tenant's events in log order, and with --follow wait for new ones",
	usage:   "eventlite tail [--from POSITION] [--tag TAG]... [--type TYPE]... [--follow]",
	about: `Prints the tenant's events of the global log, one structured CloudEvent
JSON per line, in position order from the start (or from --from). Without
--follow it stops at the newest event, printing nothing when there is none;
with --follow it then waits for new events until interrupted (SIGINT or
SIGTERM), and exits 0. Without --follow it only reads: it never creates,
migrates or converts the database file (a missing file exits 5); with
--follow it opens the file as a writer does, creating it when missing (it
waits for the first append) and upgrading an older schema.

--tag TAG and --type TYPE (repeatable) print only the events that carry
every --tag tag and, when --type is given, are of one of the types: a
query of one item, read through the tag index (types alone read the log
from --from on). Events before a truncate or of a deleted stream do not
match. With --follow the new matching events follow.`,
	new: func() runner { return &tailCmd{} },
}

type tailCmd struct {
	from        countFlag
	follow      bool
	tags, types listFlag
}

func (t *tailCmd) flags(fs *flag.FlagSet) {
	fs.Var(&t.from, "from", "start at global position `POSITION`, inclusive (default: the start of the log)")
	fs.BoolVar(&t.follow, "follow", false, "wait for new events until interrupted")
	fs.Var(&t.tags, "tag", "only events carrying `TAG` (repeatable: every tag)")
	fs.Var(&t.types, "type", "only events of `TYPE` (repeatable: any of the types)")
}

func (t *tailCmd) run(ctx context.Context, c *cli, _ []string) error {
	w := newEventWriter(c.stdout)
	tail := func(s *store.Store) error { return t.tail(ctx, s, w, string(c.global.tenant)) }
	var err error
	if t.follow {
		// A follow waits for the first append, so it may create the
		// database; it opens it as the writers do.
		err = c.withStore(ctx, true, tail)
	} else {
		err = c.withReader(ctx, tail)
	}
	switch {
	case t.follow && ctx.Err() != nil && errors.Is(err, context.Canceled):
		return nil // a follow ends when it is interrupted
	}
	return err
}

// tail prints the tenant's events from t.from on and, when following,
// waits for commits and prints what they added.
func (t *tailCmd) tail(ctx context.Context, s *store.Store, w *eventWriter, tenant string) error {
	next := int64(t.from)
	for {
		// Take the channel before reading, so no commit goes unseen.
		changed := s.Changed()
		for e, err := range s.ReadAll(ctx, store.ReadAllOptions{From: next, Tenant: tenant, Query: queryItem(t.tags, t.types)}) {
			if err != nil {
				return errors.Join(err, w.flush())
			}
			if err := w.write(&e); err != nil {
				return err
			}
			next = e.Position + 1
		}
		if err := w.flush(); err != nil {
			return err
		}
		if !t.follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// eventWriter prints events as JSON Lines: one structured CloudEvent per
// line, as envelope encodes it.
type eventWriter struct {
	w   *bufio.Writer
	buf []byte
}

func newEventWriter(w io.Writer) *eventWriter {
	return &eventWriter{w: bufio.NewWriter(w)}
}

func (w *eventWriter) write(e *envelope.Event) error {
	w.buf = append(e.AppendJSON(w.buf[:0]), '\n')
	_, err := w.w.Write(w.buf)
	return err
}

func (w *eventWriter) flush() error { return w.w.Flush() }
