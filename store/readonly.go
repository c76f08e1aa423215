package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

var (
	// ErrNotEventlite: the file is not an eventlite database (it has
	// tables but no eventlite schema, or is not a SQLite database at
	// all). Open refuses it, read-only or not, and leaves it as it was.
	// Permanent: check the path.
	ErrNotEventlite = errors.New("not an eventlite database")
	// ErrSchemaTooOld: a read-only open (Options.ReadOnly) found a file
	// of an older eventlite schema, or an empty file. A read-only store
	// never migrates: open it for writing once (eventlite migrate, or any
	// command that writes) to upgrade it.
	ErrSchemaTooOld = errors.New("database schema is older than this binary")
	// ErrReadOnly: a write on a store opened with Options.ReadOnly.
	// Permanent for that store.
	ErrReadOnly = errors.New("store is read-only")
)

// NotEventliteError says why a file is not an eventlite database.
// errors.Is(err, ErrNotEventlite) holds for it.
type NotEventliteError struct {
	Path   string
	Reason string
}

func (e *NotEventliteError) Error() string {
	return fmt.Sprintf("%v: %s %s; eventlite left it unchanged: check the path", ErrNotEventlite, e.Path, e.Reason)
}

// Unwrap lets errors.Is(err, ErrNotEventlite) match.
func (e *NotEventliteError) Unwrap() error { return ErrNotEventlite }

// eventliteTables are created by the first migration: a file whose
// user_version is set and that has them is an eventlite database.
var eventliteTables = []string{"streams", "events", "outbox"}

// checkSchema reads what the file holds before anything writes to it and
// returns its schema version: 0 for a file without tables (zero bytes, or
// new), which a write open may turn into an eventlite database. It refuses
// a file with other tables (*NotEventliteError), one of a newer schema
// (ErrSchemaTooNew) and, in a read-only store, one of an older schema or
// an empty one (ErrSchemaTooOld).
func (s *Store) checkSchema(ctx context.Context, known int) (int, error) {
	// One statement, so one snapshot: another process may be applying a
	// migration (its tables and user_version commit together).
	objects, ours, version, err := s.ex.SchemaObjects(ctx, s.wconn, eventliteTables)
	switch {
	case err != nil && s.notADB(err) != err:
		return 0, s.notADB(err)
	case err != nil:
		return 0, fmt.Errorf("store: read schema of %s: %w", s.path, mapErr(err))
	case objects == 0 && version == 0:
		if s.opts.ReadOnly {
			return 0, fmt.Errorf("%w: %s has no eventlite schema yet, and a read-only open does not create one: "+
				"open it for writing (eventlite migrate, or any command that writes) to make it an eventlite database", ErrSchemaTooOld, s.path)
		}
		return 0, nil
	case version > known:
		// Checked first: a newer eventlite may have other tables.
		maybe := ""
		if ours != len(eventliteTables) {
			maybe = " (or it is not an eventlite database: check the path)"
		}
		return 0, fmt.Errorf("%w: %s has schema %d, this eventlite knows up to %d: upgrade eventlite%s", ErrSchemaTooNew, s.path, version, known, maybe)
	case ours != len(eventliteTables) || version == 0:
		return 0, &NotEventliteError{Path: s.path, Reason: fmt.Sprintf("holds %d tables or other schema objects of its own and no eventlite schema (user_version %d)", objects, version)}
	case version < known && s.opts.ReadOnly:
		return 0, fmt.Errorf("%w: %s has schema %d, this eventlite reads schema %d, and a read-only open does not migrate: "+
			"upgrade it with eventlite migrate (or any command that writes), then read it", ErrSchemaTooOld, s.path, version, known)
	}
	return version, nil
}

// notADB turns the driver's "not a database" (the file is not SQLite) into a
// *NotEventliteError and returns other errors as they are.
func (s *Store) notADB(err error) error {
	if classify(err) == driver.NotADatabase {
		return &NotEventliteError{Path: s.path, Reason: "is not a SQLite database"}
	}
	return err
}

// errReadOnly is the error of every write to a read-only store.
func (s *Store) errReadOnly() error {
	return fmt.Errorf("%w: %s was opened with Options.ReadOnly; open it without ReadOnly to write", ErrReadOnly, s.path)
}

// MigrateResult is what Migrate did.
type MigrateResult struct {
	Path string
	From int // the schema version found: 0 for a new or empty file
	To   int // the schema version now: SchemaVersion()
}

// Migrate brings the database file at path to this binary's schema, as
// Open does, creating it when it does not exist, and closes it. It
// refuses what Open refuses: a file that is not an eventlite database
// (ErrNotEventlite) and one of a newer schema (ErrSchemaTooNew). opts'
// ReadOnly is ignored.
func Migrate(ctx context.Context, path string, opts *Options) (MigrateResult, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.ReadOnly = false
	s, err := Open(ctx, path, &o)
	if err != nil {
		return MigrateResult{}, err
	}
	res := MigrateResult{Path: s.path, From: s.schemaAtOpen, To: s.schemaKnown()}
	return res, s.Close()
}
