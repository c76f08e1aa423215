package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
)

var backupCommand = &command{
	name:    "backup",
	args:    []string{"DEST"},
	summary: "write a verified copy of the database to DEST while appends go on",
	usage:   "eventlite backup DEST [--force] [--json]",
	about: `Copies the database (--db) to DEST with SQLite's online backup API inside one
read transaction, while other processes go on appending: the copy is the
database as it was at one commit, holding every append acknowledged before the
backup began and no part of a batch. The database is read only, never migrated
or locked against writers. The copy is written under a temporary name beside
DEST, made a self-contained file (rollback journal, no -wal), verified
(integrity_check, the store's invariants, head position and event count of the
snapshot) and only then renamed to DEST; a backup that fails or is killed
leaves nothing at DEST (a killed one may leave .DEST.eventlite-backup-*.tmp:
delete it).

It prints what the backup holds: events, streams, head position, size and
time taken. With --json, one object:
  {"path","events","streams","head_position","bytes","seconds"}
with head_position a decimal string.

DEST existing: exit 4 unless --force, which replaces it (never a directory,
the database itself, or a file with a -wal beside it). Exit 4 too when the
database is not eventlite's or fails the checks; 5 when it does not exist.
Progress goes to stderr: a bar on a terminal, a line every few seconds
otherwise.

A SQLite file only: with a PostgreSQL --db (or DEST) it exits 2, "not
supported on PostgreSQL"; back up a PostgreSQL database with pg_dump or the
server's own backups.`,
	new: func() runner { return &backupCmd{} },
}

var restoreCommand = &command{
	name:    "restore",
	args:    []string{"SRC"},
	summary: "replace the database with the backup SRC, in place",
	usage:   "eventlite restore SRC [--force] [--min-sequence N] [--reapply-forgets] [--json]",
	about: `Replaces the database (--db) with the eventlite database SRC (a file that
eventlite backup wrote, or any eventlite database).

SRC is checked first, without changing it: an eventlite database of a schema
this binary knows (an older one is restored as it is and migrated by the next
command that writes), integrity_check ok, the store's invariants holding. A SRC
that fails is refused with exit 4 and the database is not touched.

The restore decides before it commits. It switches the database to WAL mode
(so that it can be read while the restore holds its lock), takes the
database's write lock (exit 7 when another process holds it for longer than
5s; unchanged), reads it under that lock, refuses a database that has events
unless --force and another program's database always (exit 4; unchanged),
and copies SRC in through SQLite's backup API in one transaction: processes
that have the database open see the restored content at their next read (the
file is never renamed over). Every exit 4 comes before that commit. After it,
writers may append at once, so restore checks only what they cannot change:
SRC's events up to its head, the position floor and the recorded gap. A
failure there exits 8: the database was replaced, run eventlite doctor. A database that
does not exist is created. Positions the old database had handed out are never
handed out again: the next append gets a position above all of them (the gap
is recorded; doctor reports it as information); --min-sequence N raises that
floor to N too (for a database that is lost: the highest position its
consumers have seen). N is at most 9223372036854775806, the highest position
a store hands out (beyond it: exit 4, nothing changed); an append that would
pass it exits 4 and stores nothing.

Stream versions are not handed out twice either: for every stream whose newest
version in the old database was above SRC's, the versions between are
recorded as a restore's gap and an eventlite.stream.restored event
({"from":F,"to":T}) is appended at version T+1, so the stream's next append
continues above every version it had. This needs the old database readable
(restoring into a new file, nothing is known of its versions) and SRC of this
binary's schema. With --force the restore first takes the database's leases
(the relay's, projection runners') and waits until they were to expire (at
most the relay's lease TTL, 15s by default), so that the relay starts no send
of a position the restore removes after it commits; the relay then takes its
lease back and publishes again from the restored watermark. docs/backup.md
says what an operator sees after a restore.

A restore does not un-forget. When the database has forgotten subjects (eventlite
forget: keys destroyed, or tombstones) that SRC has not, because SRC was taken
before the forget, their data would decrypt again: the restore is refused with
exit 4, naming them, and the database is left unchanged. With --reapply-forgets
it forgets them again in what it restores, under the same lock: each key
destroyed (or tombstone kept) as the database had it, the subjects' snapshots
dropped, the copies of their events in quarantine, deferral and version
conflicts and their outbox error texts cleared, their ciphertext removed, and
prints how many. The database's eventlite.subject.forgotten events are lost
with the interval the backup lacks: after the commit the restore appends one
again per subject, so that read models in the file purge it.

With --json, one object: {"path","source","events","streams","head_position",
"sequence","previous_events","previous_sequence","reforgotten","bytes",
"seconds"}, positions as decimal strings, reforgotten a list of
{"tenant","subject"}.

A SQLite file only: with a PostgreSQL --db (or SRC) it exits 2, "not
supported on PostgreSQL"; restore a PostgreSQL database with pg_restore or the
server's own backups.`,
	new: func() runner { return &restoreCmd{} },
}

type backupCmd struct{ force bool }

func (b *backupCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&b.force, "force", false, "replace DEST when it exists")
}

// backupJSON is backup's --json output.
type backupJSON struct {
	Path         string  `json:"path"`
	Events       int64   `json:"events"`
	Streams      int64   `json:"streams"`
	HeadPosition int64   `json:"head_position,string"`
	Bytes        int64   `json:"bytes"`
	Seconds      float64 `json:"seconds"`
}

func (b *backupCmd) run(ctx context.Context, c *cli, args []string) error {
	rep := newCopyReporter(c, "backup")
	res, err := backup.Create(ctx, c.global.db, args[0], &backup.Options{Force: b.force, Progress: rep.progress})
	rep.finish()
	if err != nil {
		return backupError(err)
	}
	if c.global.json {
		return writeJSON(c.stdout, backupJSON{Path: res.Path, Events: res.Events, Streams: res.Streams,
			HeadPosition: res.HeadPosition, Bytes: res.Bytes, Seconds: seconds(res.Elapsed)})
	}
	_, err = fmt.Fprintf(c.stdout, "backup %s: %d events in %d streams, head position %d, %s, in %s (%s); verified: integrity_check, invariants, head and count\n",
		res.Path, res.Events, res.Streams, res.HeadPosition, size(res.Bytes), res.Elapsed.Round(time.Millisecond), rate(res.Bytes, res.Elapsed))
	return err
}

type restoreCmd struct {
	force          bool
	minSequence    countFlag
	reapplyForgets bool
}

func (r *restoreCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&r.force, "force", false, "replace a database that has events")
	fs.Var(&r.minSequence, "min-sequence", "the next append gets a position above `N` too (for a lost database: the highest position consumers saw)")
	fs.BoolVar(&r.reapplyForgets, "reapply-forgets", false, "forget again, in what is restored, the subjects the database forgot after SRC was taken (without it such a restore exits 4)")
}

// subjectJSON is a forgotten subject in --json output.
type subjectJSON struct {
	Tenant  string `json:"tenant"`
	Subject string `json:"subject"`
}

func subjectsJSON(subjects []backup.ForgottenSubject) []subjectJSON {
	out := make([]subjectJSON, 0, len(subjects))
	for _, s := range subjects {
		out = append(out, subjectJSON{Tenant: s.Tenant, Subject: s.Subject})
	}
	return out
}

// restoreJSON is restore's --json output.
type restoreJSON struct {
	Path             string        `json:"path"`
	Source           string        `json:"source"`
	Events           int64         `json:"events"`
	Streams          int64         `json:"streams"`
	HeadPosition     int64         `json:"head_position,string"`
	Sequence         int64         `json:"sequence,string"`
	PreviousEvents   int64         `json:"previous_events"`
	PreviousSequence int64         `json:"previous_sequence,string"`
	Reforgotten      []subjectJSON `json:"reforgotten"`
	Bytes            int64         `json:"bytes"`
	Seconds          float64       `json:"seconds"`
}

func (r *restoreCmd) run(ctx context.Context, c *cli, args []string) error {
	rep := newCopyReporter(c, "restore")
	res, err := backup.Restore(ctx, args[0], c.global.db, &backup.RestoreOptions{Force: r.force, MinSequence: int64(r.minSequence),
		ReapplyForgets: r.reapplyForgets, Progress: rep.progress})
	rep.finish()
	if err != nil {
		return backupError(err)
	}
	if c.global.json {
		return writeJSON(c.stdout, restoreJSON{Path: res.Path, Source: res.Source, Events: res.Events, Streams: res.Streams,
			HeadPosition: res.HeadPosition, Sequence: res.Sequence, PreviousEvents: res.PreviousEvents,
			PreviousSequence: res.PreviousSequence, Reforgotten: subjectsJSON(res.Reforgotten), Bytes: res.Bytes, Seconds: seconds(res.Elapsed)})
	}
	_, err = fmt.Fprintf(c.stdout, "restore %s from %s: %d events in %d streams, head position %d, in %s; the next append gets a position above %d (the database held %d events before)\n",
		res.Path, res.Source, res.Events, res.Streams, res.HeadPosition, res.Elapsed.Round(time.Millisecond), res.Sequence, res.PreviousEvents)
	if err == nil && len(res.RolledBack) > 0 {
		_, err = fmt.Fprintf(c.stdout, "%d streams taken back: each got an %s event above the versions it had (a stream the backup holds hard-deleted, only the recorded gap), which are never handed out again\n",
			len(res.RolledBack), store.TypeStreamRestored)
	}
	if err == nil && len(res.Reforgotten) > 0 {
		_, err = fmt.Fprintf(c.stdout, "%d subjects forgotten again, as the database had them (the backup was taken before they were forgotten)\n", len(res.Reforgotten))
	}
	return err
}

// backupError gives backup's and restore's errors their exit codes.
func backupError(err error) error {
	switch {
	case errors.Is(err, backup.ErrRestoreUnverified):
		// First: the database did change, whatever the check met.
		return &exitError{code: exitReplaced, err: err}
	case errors.Is(err, store.ErrNotFound):
		return &exitError{code: exitNotFound, err: err}
	case errors.Is(err, backup.ErrDestExists), errors.Is(err, backup.ErrTargetNotEmpty), errors.Is(err, store.ErrNotEventlite),
		errors.Is(err, store.ErrSchemaTooNew), errors.Is(err, backup.ErrInvalid), errors.Is(err, store.ErrPositionRange),
		errors.Is(err, backup.ErrUnforget):
		return &exitError{code: exitInvalid, err: err}
	}
	return err // classify: ErrBusy exits 7, an interruption 6
}

// copyReporter shows a backup's or restore's progress on stderr: a bar
// on a terminal, else a line every few seconds.
type copyReporter struct {
	c     *cli
	name  string
	tty   bool
	bar   *progressbar.ProgressBar
	phase string
	last  time.Time
	prev  backup.Progress
}

func newCopyReporter(c *cli, name string) *copyReporter {
	return &copyReporter{c: c, name: name, tty: c.stderrIsTerminal(), last: time.Now()}
}

func (r *copyReporter) progress(p backup.Progress) {
	r.prev = p
	total, done := p.TotalPages*p.PageSize, p.Pages*p.PageSize
	changed := p.Phase != r.phase
	r.phase = p.Phase
	if !r.tty {
		if time.Since(r.last) >= 2*time.Second {
			r.last = time.Now()
			pct := 100.0
			if total > 0 {
				pct = 100 * float64(done) / float64(total)
			}
			fmt.Fprintf(r.c.stderr, "%s: %s %s of %s (%.0f%%)\n", r.name, p.Phase, size(done), size(total), pct)
		}
		return
	}
	if r.bar == nil {
		r.bar = progressbar.NewOptions64(max(total, 1),
			progressbar.OptionSetWriter(r.c.stderr),
			progressbar.OptionSetDescription(r.name+": "+p.Phase),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
	if changed {
		r.bar.Describe(r.name + ": " + p.Phase)
		if total > 0 {
			r.bar.ChangeMax64(total)
		}
	}
	_ = r.bar.Set64(done)
}

// finish ends the bar's line.
func (r *copyReporter) finish() {
	if r.bar != nil {
		_ = r.bar.RenderBlank()
		fmt.Fprintln(r.c.stderr)
	}
}

func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// size prints a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// rate prints bytes per second for people.
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MB/s", float64(n)/d.Seconds()/1e6)
}
