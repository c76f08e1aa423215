// Command eventlite is the command line interface to an eventlite store:
// it appends events, prints streams and the log as CloudEvents JSON Lines,
// and lists streams. Run "eventlite help" for the commands, their flags and
// the exit codes.
//
// Every command works on a SQLite file or, with a postgres:// --db, on a
// PostgreSQL schema (this binary links the PostgreSQL driver); the file-
// only ones (backup, restore, scavenge --vacuum, demo --db) say so with
// exit 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/internal/cliflag"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	_ "github.com/eventlite/eventlite/store/postgres" // --db postgres:// (the library links it only by import)
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handling: a second one
	// ends a process that is slow to stop.
	go func() {
		<-ctx.Done()
		stop()
	}()
	m := &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	code := m.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// Main is the eventlite program with its surroundings made explicit, so
// that tests run it in-process. A nil Stdin reads as empty, nil Stdout and
// Stderr discard, and a nil Getenv is an empty environment.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads EVENTLITE_DB (the default --db) and EVENTLITE_LOG (the
	// log level: trace, debug, info, warn, error or off).
	Getenv func(string) string
}

// Run runs one command line (args without the program name) and returns
// the exit code. When ctx ends, a follow (tail --follow) stops cleanly and
// returns 0; a finite job stops early and returns 6.
func (m *Main) Run(ctx context.Context, args []string) int {
	c := &cli{stdin: m.Stdin, stdout: m.Stdout, getenv: m.Getenv}
	if c.stdin == nil {
		c.stdin = strings.NewReader("")
	}
	if c.stdout == nil {
		c.stdout = io.Discard
	}
	stderr := m.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	c.stderr = &syncWriter{w: stderr}
	if c.getenv == nil {
		c.getenv = func(string) string { return "" }
	}
	return c.exit(c.run(ctx, args))
}

// Exit codes: one table for every command, printed by "eventlite help".
const (
	exitOK         = 0
	exitInternal   = 1
	exitUsage      = 2
	exitConflict   = 3
	exitInvalid    = 4
	exitNotFound   = 5
	exitIncomplete = 6
	exitBusy       = 7
	exitReplaced   = 8
)

var exitCodes = []struct {
	code    int
	meaning string
}{
	{exitOK, "ok (also a long-running command such as tail --follow or relay stopped by SIGINT or SIGTERM)"},
	{exitInternal, "internal error"},
	{exitUsage, "usage: unknown command or flag, malformed flag value, wrong arguments; relay, serve, replay,\n     " +
		"catalog or copy without --master-key-file while the database holds encrypted events; a\n     " +
		"command that works on a file (backup, restore, scavenge --vacuum, demo --db) on PostgreSQL\n     " +
		"(backup.ErrFileOnly); copy: a source that is not a SQLite file, a target that is not\n     " +
		"PostgreSQL, or data the target cannot hold exactly (store.ErrUnsupported)"},
	{exitConflict, "version conflict (the message names expected and actual version), or a failed append condition (append --if-tag: the message names the first matching event's position and id)"},
	{exitInvalid, "invalid input, a reused id included (the message names the field and the reason), a\n     " +
		"hard-deleted stream (store.ErrStreamDeleted), truncate --before beyond the stream's version,\n     " +
		"a write to one of the store's own streams (ids starting with eventlite-: append, delete,\n     " +
		"truncate, a retention policy; store.ErrReservedStream), a position past the highest a store\n     " +
		"hands out (9223372036854775806, envelope.MaxPosition: an append the log has no positions\n     " +
		"left for, restore --min-sequence beyond it; store.ErrPositionRange), an append carrying\n     " +
		"erasurekey without a master key, a malformed master key file or a wrong master key; or a\n     " +
		"database file eventlite will not use as it is: not an eventlite database\n     " +
		"(store.ErrNotEventlite), a newer schema, an older schema for a command that only reads\n     " +
		"(store.ErrSchemaTooOld: run eventlite migrate), another user's file it would lock out\n     " +
		"(store.ErrNotOwner); backup: DEST exists; restore: the database has events, or SRC is not an\n     " +
		"eventlite database or fails its checks; copy: the target schema is not empty; effects\n     " +
		"approve/reject: the effect's state allows no decision, or --args-hash is not the hash of its\n     " +
		"arguments"},
	{exitNotFound, "not found (a stream, a deleted one included, a JetStream stream, a dead letter, a\n     " +
		"projection, a quarantined event or its projection or consumer, an effect in the tenant, a\n     " +
		"retention policy, or the database file that does not exist)"},
	{exitIncomplete, "work remains or needs a person (a finite job interrupted before it finished, doctor\n     " +
		"findings, relay --once with rows left, replay --dry-run that found drift, scavenge whose WAL\n     " +
		"checkpoint a reader kept from finishing: run it again once readers are done)"},
	{exitBusy, "busy: the database stayed locked past the timeout (restore: another process holds its write\n     " +
		"lock; copy: a lease in the source is held); retry"},
	{exitReplaced, "restore: the database was replaced by SRC, but the check after the commit failed\n     " +
		"(backup.ErrRestoreUnverified): it holds SRC's content, not its old one; run eventlite doctor\n     " +
		"on it before serving from it"},
}

// command is one subcommand: its help and a constructor for its runner.
type command struct {
	name    string
	args    []string // the positional arguments, all required
	maxArgs int      // when above len(args): the most it takes, those past args optional
	summary string   // one line for the command list
	usage   string   // the synopsis lines after "Usage: "
	about   string   // what it does, for "eventlite help NAME"
	new     func() runner
}

// runner is a command's flags and action: flags registers them on the
// command's flag set; run runs with the positional arguments once all
// flags are parsed.
type runner interface {
	flags(fs *flag.FlagSet)
	run(ctx context.Context, c *cli, args []string) error
}

var commands = []*command{appendCommand, readCommand, deleteCommand, truncateCommand, retentionCommand, scavengeCommand, forgetCommand, tailCommand, streamsCommand, projectionsCommand, replayCommand, catalogCommand, relayCommand, serveCommand, dlqCommand, quarantineCommand, effectsCommand, doctorCommand, backupCommand, restoreCommand, copyCommand, migrateCommand, demoCommand, versionCommand}

func lookup(name string) *command {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd
		}
	}
	return nil
}

// cli is one run of the program.
type cli struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer // shared with the logger, which may write from the store's goroutines
	getenv func(string) string
	global globals
	log    hclog.Logger
}

// globals are the flags every command accepts, before or after its name.
type globals struct {
	db      string
	dbSet   bool // --db was given (demo ignores $EVENTLITE_DB, not --db)
	json    bool
	tenant  tenantFlag
	verbose bool
	// masterKeyFile holds the master key of erasure (--master-key-file,
	// default $EVENTLITE_MASTER_KEY_FILE).
	masterKeyFile string
}

// register adds the global flags to fs, with their current values as
// defaults, so that a value given before the command carries over.
func (g *globals) register(fs *flag.FlagSet) {
	fs.Func("db", "the SQLite database file at `PATH`, or a postgres:// address whose eventlite_schema parameter names the schema (default eventlite); default $EVENTLITE_DB, else ./eventlite.db", func(v string) error {
		g.db, g.dbSet = v, true
		return nil
	})
	fs.BoolVar(&g.json, "json", g.json, "print JSON instead of text")
	fs.Var(&g.tenant, "tenant", "append to and read from tenant `T` (default \"default\")")
	fs.BoolVar(&g.verbose, "verbose", g.verbose, "log debug messages to stderr (as EVENTLITE_LOG=debug does)")
	fs.StringVar(&g.masterKeyFile, "master-key-file", g.masterKeyFile, "the master key of erasure, in `FILE` (32 raw bytes or 64 hex digits; default $EVENTLITE_MASTER_KEY_FILE)")
}

func (c *cli) run(ctx context.Context, args []string) error {
	c.global = globals{db: c.getenv("EVENTLITE_DB"), tenant: "default", masterKeyFile: c.getenv("EVENTLITE_MASTER_KEY_FILE")}
	if c.global.db == "" {
		c.global.db = "eventlite.db"
	}
	top := newFlagSet("eventlite")
	c.global.register(top)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeHelp(c.stdout)
		}
		return &usageError{err: err}
	}
	if top.NArg() == 0 {
		return &usageError{err: errors.New("no command given")}
	}
	name, rest := top.Arg(0), top.Args()[1:]
	if name == "help" {
		return c.help(rest)
	}
	cmd := lookup(name)
	if cmd == nil {
		return &usageError{err: fmt.Errorf("unknown command %q", name)}
	}
	fs := newFlagSet(name)
	c.global.register(fs)
	r := cmd.new()
	r.flags(fs)
	pos, err := cliflag.ParseInterleaved(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		return cmd.writeHelp(c.stdout)
	}
	if err != nil {
		return &usageError{cmd: cmd, err: fmt.Errorf("%s: %w", name, err)}
	}
	if len(pos) < len(cmd.args) || len(pos) > max(len(cmd.args), cmd.maxArgs) {
		return &usageError{cmd: cmd, err: fmt.Errorf("%s takes %s, got %d argument(s)", name, argCount(cmd.args), len(pos))}
	}
	if c.global.db == "" {
		return &usageError{cmd: cmd, err: errors.New("--db: empty path")}
	}
	c.log = c.newLogger()
	return r.run(ctx, c, pos)
}

// help runs "eventlite help [COMMAND]".
func (c *cli) help(args []string) error {
	fs := newFlagSet("help")
	c.global.register(fs)
	pos, err := cliflag.ParseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return writeHelp(c.stdout)
	case err != nil:
		return &usageError{err: err}
	case len(pos) == 0:
		return writeHelp(c.stdout)
	case len(pos) > 1:
		return &usageError{err: fmt.Errorf("help takes at most one command, got %d arguments", len(pos))}
	}
	cmd := lookup(pos[0])
	if cmd == nil {
		return &usageError{err: fmt.Errorf("help: unknown command %q", pos[0])}
	}
	return cmd.writeHelp(c.stdout)
}

func argCount(names []string) string {
	if len(names) == 0 {
		return "no arguments"
	}
	return fmt.Sprintf("%d argument(s) (%s)", len(names), strings.Join(names, " "))
}

func (c *cli) newLogger() hclog.Logger {
	level := hclog.Warn
	if s := c.getenv("EVENTLITE_LOG"); s != "" {
		if l := hclog.LevelFromString(s); l != hclog.NoLevel {
			level = l
		} else {
			fmt.Fprintf(c.stderr, "eventlite: EVENTLITE_LOG=%q is not a log level (trace, debug, info, warn, error, off); using warn\n", s)
		}
	}
	if c.global.verbose && level > hclog.Debug {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{Name: "eventlite", Level: level, Output: c.stderr})
}

// fileOnlyError refuses a command, or one of its flags, that works on a
// database file when --db is a PostgreSQL address: exit 2. It says what
// to do instead.
type fileOnlyError struct {
	what    string // the command or flag: "demo", "scavenge --vacuum"
	instead string
}

func (e *fileOnlyError) Error() string {
	return fmt.Sprintf("%s: %v: %s", e.what, backup.ErrFileOnly, e.instead)
}

// Unwrap lets errors.Is(err, backup.ErrFileOnly) match: classify exits 2.
func (e *fileOnlyError) Unwrap() error { return backup.ErrFileOnly }

// onPostgres reports whether --db (or $EVENTLITE_DB) is a PostgreSQL
// address.
func (c *cli) onPostgres() bool { return store.IsPostgresAddress(c.global.db) }

// errNoDatabase: the database file does not exist, and the command does
// not create one (see withStore and withReader).
var errNoDatabase = errors.New("no such database file")

// withStore opens the store for writing (migrating an older schema), runs
// fn and closes the store. When create is false and the file does not
// exist, it returns errNoDatabase instead: only commands that may wait for
// or make the first append create a database file. A PostgreSQL address
// is no file: store.Open connects to the server (and creates the schema
// when it writes).
func (c *cli) withStore(ctx context.Context, create bool, fn func(*store.Store) error) error {
	return c.withOptions(ctx, create, store.Options{Logger: c.log}, fn)
}

// withReader opens the store read-only (store.Options.ReadOnly), runs fn
// and closes the store: for commands that only read. It never creates,
// migrates or converts the file: a missing file is errNoDatabase, an
// older schema store.ErrSchemaTooOld, and fn's writes fail with
// store.ErrReadOnly.
func (c *cli) withReader(ctx context.Context, fn func(*store.Store) error) error {
	return c.withOptions(ctx, false, store.Options{Logger: c.log, ReadOnly: true}, fn)
}

func (c *cli) withOptions(ctx context.Context, create bool, opts store.Options, fn func(*store.Store) error) (err error) {
	if !create && !store.IsPostgresAddress(c.global.db) {
		if _, err := os.Stat(c.global.db); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: %w", c.global.db, errNoDatabase)
		}
	}
	opts.MasterKeyFile = c.global.masterKeyFile
	s, err := store.Open(ctx, c.global.db, &opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", s.Path(), cerr)
		}
	}()
	return fn(s)
}

// usageError is a wrong command line: exit 2, with the usage on stderr.
type usageError struct {
	cmd *command // nil: the program's usage
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// interruptedError is a finite job stopped by ctx (SIGINT or SIGTERM)
// whose message already says what to do.
type interruptedError struct {
	msg string
	err error
}

func (e *interruptedError) Error() string { return e.msg }
func (e *interruptedError) Unwrap() error { return e.err }

// exit reports err on stderr and returns its exit code.
func (c *cli) exit(err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(c.stderr, "eventlite: %v\n\n", ue.err)
		if ue.cmd != nil {
			_ = ue.cmd.writeHelp(c.stderr)
		} else {
			_ = writeHelp(c.stderr)
		}
		return exitUsage
	}
	code, msg := classify(err)
	fmt.Fprintf(c.stderr, "eventlite: %s\n", msg)
	return code
}

// classify maps an error to its exit code and the message to print.
func classify(err error) (code int, msg string) {
	var (
		ce  *store.ConflictError
		cde *store.ConditionError
		ie  *interruptedError
		xe  *exitError
	)
	switch {
	case errors.As(err, &xe):
		return xe.code, xe.Error()
	case errors.As(err, &cde):
		return exitConflict, fmt.Sprintf("%v (append with --if-after %d once the decision has seen it)", cde, cde.Position)
	case errors.Is(err, backup.ErrFileOnly):
		return exitUsage, err.Error()
	case errors.As(err, &ce):
		next := strconv.FormatInt(ce.Actual, 10)
		if ce.Actual == 0 {
			next = "no-stream"
		}
		// The *ConflictError's own text names the stream, expected and
		// actual; the store's wrapping would repeat the stream.
		return exitConflict, fmt.Sprintf("%v: read the stream and decide again, then append with --expected %s", ce, next)
	case errors.Is(err, store.ErrStreamDeleted):
		return exitInvalid, err.Error() + ": a hard-deleted stream is never written or read again; use another stream id"
	case errors.Is(err, store.ErrInvalidEvent), errors.Is(err, store.ErrTooLarge), errors.Is(err, store.ErrDuplicate), errors.Is(err, store.ErrPositionRange),
		errors.Is(err, store.ErrIdempotencyMismatch):
		return exitInvalid, err.Error()
	case fileRefused(err):
		return exitInvalid, err.Error()
	case errors.Is(err, store.ErrMasterKey):
		return exitInvalid, err.Error()
	case errors.Is(err, errNoDatabase):
		return exitNotFound, err.Error() + ": check --db (or $EVENTLITE_DB); a command that writes, such as append, or 'eventlite migrate' creates it"
	case errors.Is(err, store.ErrNotFound):
		return exitNotFound, err.Error() + ": list the streams with 'eventlite streams' (and check --db and --tenant)"
	case errors.As(err, &ie):
		return exitIncomplete, ie.Error()
	case errors.Is(err, context.Canceled):
		return exitIncomplete, "interrupted before it finished (" + err.Error() + "): run it again"
	case errors.Is(err, store.ErrBusy):
		return exitBusy, err.Error()
	}
	return exitInternal, err.Error()
}

// fileRefused reports whether err is store.Open refusing the database file
// as it is (exit 4): not eventlite's, a schema it does not read, another
// user's file it would lock out.
func fileRefused(err error) bool {
	return errors.Is(err, store.ErrNotEventlite) || errors.Is(err, store.ErrSchemaTooOld) ||
		errors.Is(err, store.ErrSchemaTooNew) || errors.Is(err, store.ErrNotOwner)
}

// writeHelp prints the program's help.
func writeHelp(w io.Writer) error {
	var b strings.Builder
	b.WriteString("eventlite: an event store on one SQLite file, or in a PostgreSQL schema\n\n")
	b.WriteString("Usage: eventlite [global flags] COMMAND [flags] [arguments]\n\n")
	b.WriteString("Commands:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, cmd := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(tw, "  help\tshow the help of the program or of a command\n")
	_ = tw.Flush()
	b.WriteString("\n")
	writeGlobalFlags(&b)
	b.WriteString("Flags and arguments may come in any order; use -- before an argument\nthat starts with -.\n\n")
	b.WriteString("Commands that only read (read, tail without --follow, streams, projections,\n" +
		"dlq list, quarantine list, effects list, retention list, scavenge --dry-run,\n" +
		"doctor without --deep, version) never\n" +
		"create, migrate or convert the database file; 'eventlite migrate' or a command\n" +
		"that writes upgrades it. A file that is not an eventlite database is refused by\n" +
		"every command and left as it is.\n\n")
	b.WriteString("PostgreSQL: --db postgres://USER:PASSWORD@HOST:5432/DB (or postgresql://...,\n" +
		"or $EVENTLITE_DB holding one) keeps the store in a schema of that database:\n" +
		"the address's eventlite_schema parameter names it (default eventlite), and the\n" +
		"first command that writes, or 'eventlite migrate', creates it. The password is\n" +
		"never printed. The commands that work on a file answer \"not supported on\n" +
		"PostgreSQL\" with exit 2: backup, restore (use pg_dump and pg_restore, or the\n" +
		"server's backups), scavenge --vacuum and demo --db.\n\n")
	b.WriteString("Exit codes:\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "  %d  %s\n", e.code, e.meaning)
	}
	b.WriteString("\nRun 'eventlite help COMMAND' for a command's flags.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHelp prints a command's help.
func (cmd *command) writeHelp(w io.Writer) error {
	var b strings.Builder
	for i, u := range strings.Split(cmd.usage, "\n") {
		if i == 0 {
			fmt.Fprintf(&b, "Usage: %s\n", u)
		} else {
			fmt.Fprintf(&b, "       %s\n", u)
		}
	}
	fmt.Fprintf(&b, "\n%s\n\n", cmd.about)
	fs := newFlagSet(cmd.name)
	cmd.new().flags(fs)
	if writeFlags(&b, "Flags:", fs) {
		b.WriteString("\n")
	}
	writeGlobalFlags(&b)
	b.WriteString("Exit codes: see 'eventlite help'.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeGlobalFlags(b *strings.Builder) {
	fs := newFlagSet("global")
	(&globals{}).register(fs)
	writeFlags(b, "Global flags:", fs)
	b.WriteString("\n")
}

// printable returns s as it is when it prints unambiguously as one word,
// and quoted otherwise (white space, control or invisible characters).
func printable(s string) string {
	q := strconv.Quote(s)
	if q[1:len(q)-1] != s || strings.ContainsRune(s, ' ') || s == "" {
		return q
	}
	return s
}

// syncWriter serializes writes: the store's goroutines log to stderr
// while the command may print its error there.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
