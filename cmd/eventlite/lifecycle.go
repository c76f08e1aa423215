package main

import (
	"context"
	"flag"
	"fmt"
	"os/user"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
)

var deleteCommand = &command{
	name:    "delete",
	args:    []string{"STREAM"},
	summary: "delete a stream: it then reads as not found (--hard: never written again)",
	usage:   "eventlite delete STREAM [--hard] [--reason TEXT]",
	about: `Appends an eventlite.stream.deleted tombstone to the stream as its next
version, with the reason and who deleted it (the OS user name), and drops
its snapshots. The stream then reads as not found (exit 5) and counts as
absent: an append with --expected any or no-stream continues after the
tombstone's version, one with exists or a version conflicts (exit 3). With
--hard it is never written or read again (exit 4). Its events and the
tombstone stay in the log: tail, projections and the relay see them.

--reason follows the rules of an event's string attributes: valid UTF-8,
no control character (CR, LF and tab included), no leading or trailing
white space, at most 1024 bytes; another exits 4 and deletes nothing.

Prints the tombstone's append result, as append does. A stream that does
not exist, or is already deleted, exits 5; a hard-deleted one exits 4.`,
	new: func() runner { return &deleteCmd{} },
}

type deleteCmd struct {
	hard   bool
	reason string
}

func (d *deleteCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&d.hard, "hard", false, "never write or read the stream again")
	fs.StringVar(&d.reason, "reason", "", "why, `TEXT` kept in the tombstone")
}

func (d *deleteCmd) run(ctx context.Context, c *cli, args []string) error {
	// The reason follows the rules of an event's string attributes,
	// checked before the store is opened: refused, never rewritten.
	if err := envelope.ValidateText("reason", d.reason, false); err != nil {
		return fmt.Errorf("delete %s: --reason: %w", args[0], err)
	}
	by := ""
	if u, err := user.Current(); err == nil {
		by = u.Username
	}
	var res store.AppendResult
	err := c.withStore(ctx, false, func(s *store.Store) error {
		var err error
		res, err = lifecycle.For(s).Delete(ctx, string(c.global.tenant), args[0], lifecycle.DeleteOptions{Hard: d.hard, Reason: d.reason, By: by})
		return err
	})
	if err != nil {
		return err
	}
	return printAppend(c, res)
}

var truncateCommand = &command{
	name:    "truncate",
	args:    []string{"STREAM"},
	summary: "truncate a stream: its reads start at version N",
	usage:   "eventlite truncate STREAM --before N",
	about: `Appends eventlite.stream.truncated {"before":N} to the stream as its next
version (so its version moves); reads of the stream then start at version
N. N is at least 2 (and at least the version reads start at already) and
at most the stream's version: another N exits 4, a missing --before
exits 2. The events stay in the log: tail, projections
and the relay see them.

Prints the lifecycle event's append result, as append does. A stream that
does not exist, or is deleted, exits 5; a hard-deleted one exits 4.`,
	new: func() runner { return &truncateCmd{} },
}

type truncateCmd struct {
	before countFlag
	set    bool
}

func (t *truncateCmd) flags(fs *flag.FlagSet) {
	fs.Func("before", "reads start at version `N` (2 <= N <= the stream's version)", func(v string) error {
		t.set = true
		return t.before.Set(v)
	})
}

func (t *truncateCmd) run(ctx context.Context, c *cli, args []string) error {
	if !t.set {
		return &usageError{cmd: truncateCommand, err: fmt.Errorf("truncate: --before N is required")}
	}
	var res store.AppendResult
	err := c.withStore(ctx, false, func(s *store.Store) error {
		var err error
		res, err = lifecycle.For(s).Truncate(ctx, string(c.global.tenant), args[0], int64(t.before), store.Any)
		return err
	})
	if err != nil {
		return err
	}
	return printAppend(c, res)
}
