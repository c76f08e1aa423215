package main

import (
	"context"
	"errors"
	"flag"
	"os"

	"golang.org/x/term"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay/replaycmd"
	"github.com/eventlite/eventlite/store"
)

var replayCommand = &command{
	name:    "replay",
	args:    []string{"NAME"},
	summary: "rebuild a projection from the log and swap it in (or --dry-run)",
	usage:   "eventlite replay NAME [--dry-run] [--from-scratch]",
	about: `Rebuilds the projection NAME (the built-in "catalog") from the log into
shadow tables while its live read model keeps serving, verifies that the
shadow reached the log head it started from with as many events as the
log has, catches up, and swaps it in with its checkpoint in one
transaction. Interrupted (SIGINT: exit 6), killed or failed, it leaves
the live read model as it was; run it again and it resumes.

--dry-run compares the rebuild with the live read model row by row
instead, prints the rows missing, extra and different, swaps nothing and
exits 6 when there is drift.

Progress goes to stderr: a progress bar on a terminal, a line every few
seconds otherwise. With --json, stdout has one object per line instead,
{"phase","done","total","rate"}, and last a summary object (a dry run's:
"drift", "missing", "extra", "different"). Exit 7: another replay of NAME
is running.

This binary knows only the catalog (another NAME: exit 5). An
application's projections are replayed by the application's own binary,
which mounts this command with replay/replaycmd and its projections: see
docs/handler-sql.md, "Replaying an application's projections".`,
	new: func() runner { return &replayCmd{} },
}

type replayCmd struct {
	f replaycmd.Flags
}

func (r *replayCmd) flags(fs *flag.FlagSet) { r.f.Register(fs) }

// builtinProjections are the projections this binary knows.
func builtinProjections() []projection.Projection {
	return []projection.Projection{projection.Catalog()}
}

func (r *replayCmd) run(ctx context.Context, c *cli, args []string) error {
	r.f.JSON = c.global.json
	err := c.withStore(ctx, false, func(s *store.Store) error {
		if err := requireMasterKey(ctx, s, "replay"); err != nil {
			return err
		}
		return replaycmd.Replay(ctx, args[0], r.f, replaycmd.Config{
			Store:            s,
			Projections:      builtinProjections(),
			Stdout:           c.stdout,
			Stderr:           c.stderr,
			StderrIsTerminal: c.stderrIsTerminal(),
			Logger:           c.log,
		})
	})
	if errors.Is(err, errNoDatabase) {
		return &exitError{code: exitNotFound, err: err}
	}
	var xe *exitError
	if err == nil || fileRefused(err) || errors.As(err, &xe) || errors.Is(err, store.ErrMasterKey) {
		return err
	}
	return &exitError{code: replaycmd.ExitCode(err), err: err}
}

// stderrIsTerminal reports whether stderr is a terminal (progress bars
// then make sense there).
func (c *cli) stderrIsTerminal() bool {
	w := c.stderr
	if sw, ok := w.(*syncWriter); ok {
		w = sw.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// exitError is an error that carries its exit code (from the table of
// exit codes); its message is printed as it is.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
