package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/eventlite/eventlite/store"
)

var migrateCommand = &command{
	name:    "migrate",
	summary: "create the database, or upgrade its schema to this binary's",
	usage:   "eventlite migrate",
	about: `Brings the database at --db to the schema this binary writes ('eventlite
version' prints it), creating the file when it does not exist (a zero-byte
file, or a SQLite file without tables, becomes an eventlite database too).

Commands that only read (read, tail without --follow, streams, projections,
dlq list, doctor without --deep) never create, migrate or convert a file: on a
file of an older schema they exit 4 and say to run this; any command that
writes upgrades the file as well. A file that is not an eventlite database,
or of a newer schema, is refused (exit 4) and left unchanged.

Upgrading a file older than schema 16 rewrites its events table (once
from schema 14 or 15, twice from an older one): each time about 20-30 s
and the log's size in disk space per 1,000,000 events. It warns before it
starts on a log of 100,000 events or more, and an interrupt (Ctrl-C)
leaves the file at the schema it had reached. Run it at a quiet time.

On PostgreSQL (--db postgres://...) it creates the schema the address's
eventlite_schema parameter names (default eventlite) and its tables, and
PATH is the address with its password replaced by xxxxx. PostgreSQL's schema
versions are numbered on their own.

Prints "PATH: schema 6 -> 7" (or "PATH: schema 7, up to date"); with --json,
one object: {"path":"/abs/eventlite.db","from":6,"to":7}`,
	new: func() runner { return migrateCmd{} },
}

type migrateCmd struct{}

func (migrateCmd) flags(*flag.FlagSet) {}

// migrateOutput is migrate --json.
type migrateOutput struct {
	Path string `json:"path"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

func (migrateCmd) run(ctx context.Context, c *cli, _ []string) error {
	res, err := store.Migrate(ctx, c.global.db, &store.Options{Logger: c.log})
	if err != nil {
		return err
	}
	if c.global.json {
		return writeJSON(c.stdout, migrateOutput{Path: res.Path, From: res.From, To: res.To})
	}
	if res.From == res.To {
		_, err = fmt.Fprintf(c.stdout, "%s: schema %d, up to date\n", res.Path, res.To)
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "%s: schema %d -> %d\n", res.Path, res.From, res.To)
	return err
}
