package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/replay/replaycmd"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
)

var copyCommand = &command{
	name:    "copy",
	summary: "copy a SQLite database into an empty PostgreSQL schema, verified",
	usage:   "eventlite copy --from FILE.db --to postgres://... [--force] [--forgets-from DB [--reapply-forgets]] [--json]",
	about: `Copies the eventlite database in the SQLite file --from into PostgreSQL at
--to (a postgres:// address; the schema is its eventlite_schema parameter,
default "eventlite", created and migrated if it does not exist).

The copy reads one snapshot of FILE (one read transaction; the file is opened
read-only and never migrated: an older schema is refused, run 'eventlite
migrate' on it first). It refuses while a lease in FILE is held (a relay,
projection runner, replay or worker with an owner whose lease has not
expired): exit 7; stop them first, or pass --force to copy anyway (what they
write after the snapshot is not copied). It writes in one transaction, into a
schema that holds no store rows and has handed out no position (else exit 4,
nothing written): every table of the store, with their keys and ids as they
are: events byte for byte with their positions and times, streams, the
outbox with its dead letters, counters and watermark, operations, snapshots,
checkpoints, projections, quarantine, position holes, the consumers' inbox,
versions, deferred events, conflicts and stats, rebuilds, effects, retention
policies, removed ranges and event ids, erasure keys. Leases arrive released
(no owner), their tokens kept. The target's next append takes the position
after the last one FILE handed out, even when a scavenge or a restore left
positions above its newest event.

Before it commits, the copy reads itself back in its transaction: every
table's row count, a SHA-256 over every event's columns in position order and
the position sequence must equal FILE's, else nothing is committed (exit 1).
After the commit it checks the target's invariants and rebuilds the built-in
catalog read model there from the log (read models are not copied: replay
your own projections on the target with --from-scratch before their runners
start there). A store with encrypted events needs --master-key-file for that
rebuild.

A copy does not un-forget, when it is told what was forgotten. FILE's own
forgets are copied as they are; a FILE that is an older backup may still hold
the keys of subjects the live store forgot since. Name that store with
--forgets-from DB (a SQLite file or a postgres:// address, read only): a
subject forgotten there and not in FILE refuses the copy with exit 4, naming
it, nothing written. With --reapply-forgets the copy forgets them again in the
target, in its transaction: keys destroyed or tombstones kept, snapshots
dropped, copies of their events and outbox error texts cleared, ciphertext
removed; it prints how many ("reforgotten" in --json).

Progress goes to stderr, a line per phase and every few seconds. It prints
a summary, also when the invariants or the rebuild fail after the commit
(the exit code is then theirs); with --json one object:
  {"source","target","tables":{NAME:ROWS},"rows","events","sequence",
   "digest","released_leases","reforgotten","rebuilt","seconds"}
with sequence a decimal string.

Exit 0: copied, verified and rebuilt. 2: a missing or bad flag, a source that
is not a SQLite file, a target that is not PostgreSQL, or data the target
cannot hold exactly (text that is not UTF-8 or holds a NUL byte, an event
time outside the years 1677-2262). 4: the target is not empty, FILE is
not an eventlite database of this binary's schema, or the copy would bring
back a subject forgotten in --forgets-from (without --reapply-forgets). 5: FILE does not exist.
7: a lease in FILE is held, or a database stayed locked.`,
	new: func() runner { return &copyCmd{} },
}

type copyCmd struct {
	from, to       string
	force          bool
	forgetsFrom    string
	reapplyForgets bool
}

func (cc *copyCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&cc.from, "from", "", "the SQLite database `FILE` to copy")
	fs.StringVar(&cc.to, "to", "", "the PostgreSQL `ADDRESS` (postgres://...; eventlite_schema=NAME picks the schema)")
	fs.BoolVar(&cc.force, "force", false, "copy even while a lease in the source is held")
	fs.StringVar(&cc.forgetsFrom, "forgets-from", "", "refuse to bring back a subject forgotten in the store `DB` (the live store FILE is a backup of)")
	fs.BoolVar(&cc.reapplyForgets, "reapply-forgets", false, "with --forgets-from: forget those subjects again in the target instead of refusing")
}

// copyJSON is copy's --json output.
type copyJSON struct {
	Source         string           `json:"source"`
	Target         string           `json:"target"`
	Tables         map[string]int64 `json:"tables"`
	Rows           int64            `json:"rows"`
	Events         int64            `json:"events"`
	Sequence       int64            `json:"sequence,string"`
	Digest         string           `json:"digest"`
	ReleasedLeases []string         `json:"released_leases"`
	Reforgotten    []subjectJSON    `json:"reforgotten"`
	Rebuilt        []string         `json:"rebuilt"`
	Seconds        float64          `json:"seconds"`
}

func (cc *copyCmd) run(ctx context.Context, c *cli, _ []string) error {
	switch {
	case cc.from == "" || cc.to == "":
		return &usageError{cmd: copyCommand, err: errors.New("copy: --from FILE and --to ADDRESS are both required")}
	case isPostgres(cc.from):
		return &usageError{cmd: copyCommand, err: errors.New("copy: --from must be a SQLite file; the copy goes from SQLite to PostgreSQL")}
	case !isPostgres(cc.to):
		return &usageError{cmd: copyCommand, err: errors.New("copy: --to must be a postgres:// address")}
	}
	if _, err := os.Stat(cc.from); errors.Is(err, os.ErrNotExist) {
		return &exitError{code: exitNotFound, err: fmt.Errorf("%s: %w: check --from", cc.from, errNoDatabase)}
	}
	// The catalog's rebuild reads every event: refuse before copying
	// rather than after, when the source holds encrypted events and no
	// master key is given.
	err := withSource(ctx, c, cc.from, func(s *store.Store) error { return requireMasterKey(ctx, s, "copy") })
	if err != nil {
		return copyError(err)
	}
	rep := &copyProgress{c: c, last: time.Now()}
	var rebuilt []string
	res, err := backup.Copy(ctx, cc.from, cc.to, &backup.CopyOptions{
		Force:          cc.force,
		ForgetsFrom:    cc.forgetsFrom,
		ReapplyForgets: cc.reapplyForgets,
		Target:         &store.Options{Logger: c.log, MasterKeyFile: c.global.masterKeyFile},
		Progress:       rep.progress,
		Rebuild: func(ctx context.Context, s *store.Store) error {
			for _, p := range builtinProjections() {
				r, err := replay.Rebuild(ctx, s, p, &replay.Options{FromScratch: true, Logger: c.log, Progress: rep.replay(p.Name)})
				if err != nil {
					return err
				}
				rebuilt = append(rebuilt, fmt.Sprintf("%s (%d events)", p.Name, r.Applied))
			}
			return nil
		},
	})
	if err != nil && !res.Committed {
		return copyError(err)
	}
	if len(res.ReleasedLeases) > 0 {
		fmt.Fprintf(c.stderr, "copy: --force: the leases %s were held in the source; they arrive released\n", strings.Join(res.ReleasedLeases, ", "))
	}
	if c.global.json {
		tables := make(map[string]int64, len(res.Tables))
		for _, t := range res.Tables {
			tables[t.Name] = t.Rows
		}
		if werr := writeJSON(c.stdout, copyJSON{Source: res.Source, Target: res.Target, Tables: tables, Rows: res.Rows, Events: res.Events,
			Sequence: res.Sequence, Digest: res.Digest, ReleasedLeases: nonNil(res.ReleasedLeases), Reforgotten: subjectsJSON(res.Reforgotten), Rebuilt: nonNil(rebuilt), Seconds: seconds(res.Elapsed)}); err == nil {
			err = werr
		}
		return copyError(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "copy %s -> %s: %d rows in %d tables, %d events, position sequence %d (the next append takes %d), in %s\n",
		res.Source, res.Target, res.Rows, len(res.Tables), res.Events, res.Sequence, res.Sequence+1, res.Elapsed.Round(time.Millisecond))
	for _, t := range res.Tables {
		if t.Rows > 0 {
			fmt.Fprintf(&b, "  %-20s %d\n", t.Name, t.Rows)
		}
	}
	fmt.Fprintf(&b, "verified before the commit: row counts, event digest %s, position sequence\n", res.Digest)
	if len(res.Reforgotten) > 0 {
		fmt.Fprintf(&b, "%d subjects forgotten again in the target, as %s has them\n", len(res.Reforgotten), cc.forgetsFrom)
	}
	if err == nil {
		fmt.Fprintf(&b, "verified after: invariants; rebuilt: %s\n", strings.Join(rebuilt, ", "))
	}
	if _, werr := fmt.Fprint(c.stdout, b.String()); err == nil {
		err = werr
	}
	return copyError(err)
}

// isPostgres reports whether addr is a PostgreSQL address.
func isPostgres(addr string) bool {
	l := strings.ToLower(addr)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// withSource opens the SQLite file read-only, runs fn and closes it.
func withSource(ctx context.Context, c *cli, path string, fn func(*store.Store) error) (err error) {
	s, err := store.Open(ctx, path, &store.Options{ReadOnly: true, Logger: c.log, MasterKeyFile: c.global.masterKeyFile})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return fn(s)
}

// copyError maps an error of copy to its exit code.
func copyError(err error) error {
	var xe *exitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &xe):
		return err
	case errors.Is(err, store.ErrUnsupported):
		return &exitError{code: exitUsage, err: err}
	case errors.Is(err, store.ErrLeaseHeld):
		return &exitError{code: exitBusy, err: err}
	case errors.Is(err, backup.ErrTargetNotEmpty), errors.Is(err, backup.ErrUnforget):
		return &exitError{code: exitInvalid, err: err}
	case errors.Is(err, store.ErrNotFound):
		return &exitError{code: exitNotFound, err: err}
	case fileRefused(err), errors.Is(err, store.ErrMasterKey):
		return err // classify: exit 4
	case errors.Is(err, replay.ErrHandler), errors.Is(err, replay.ErrVerify):
		return &exitError{code: replaycmd.ExitCode(err), err: err}
	}
	return err // classify: ErrBusy exits 7, an interruption 6
}

// copyProgress prints a copy's progress on stderr: a line at each change
// of phase or table, and every few seconds.
type copyProgress struct {
	c     *cli
	last  time.Time
	phase backup.CopyPhase
}

func (r *copyProgress) progress(p backup.CopyProgress) {
	if p.Phase == backup.CopyPhaseDone {
		return
	}
	if p.Phase == r.phase && time.Since(r.last) < 2*time.Second {
		return
	}
	r.phase, r.last = p.Phase, time.Now()
	switch p.Phase {
	case backup.CopyPhaseRows:
		fmt.Fprintf(r.c.stderr, "copy: %s: %d of %d rows\n", p.Table, p.Done, p.Total)
	case backup.CopyPhaseVerify:
		fmt.Fprintf(r.c.stderr, "copy: committed %d rows; checking the target's invariants\n", p.Done)
	case backup.CopyPhaseRebuild:
		fmt.Fprintf(r.c.stderr, "copy: rebuilding the read models\n")
	}
}

// replay returns the progress callback of projection name's rebuild.
func (r *copyProgress) replay(name string) func(replay.Progress) {
	var last time.Time
	var phase replay.Phase
	return func(p replay.Progress) {
		if p.Phase == phase && time.Since(last) < 2*time.Second {
			return
		}
		phase, last = p.Phase, time.Now()
		fmt.Fprintf(r.c.stderr, "copy: rebuild %s: %s %d of %d events\n", name, p.Phase, p.Done, p.Total)
	}
}
