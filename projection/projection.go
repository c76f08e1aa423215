package projection

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// Projection is a read model fed from the store's log. Set one of
// Handlers (typed: each handler receives its event's data decoded), Apply
// (untyped: the event as stored, for tools such as the catalog) or
// Deliver (a read model outside the store).
type Projection struct {
	// Name identifies the projection: its checkpoint, its lease
	// ("projection:<name>") and its quarantine entries. Required.
	Name string
	// Handlers, the typed form, apply events to the read model in the
	// store's database, one handler per Go event type (see On); the event
	// types the projection reads are theirs. Events whose data does not
	// decode are quarantined with the data named as the cause.
	Handlers *Handlers
	// Types, when set, are the only event types the projection reads.
	// With Handlers, they are read besides the handlers' own types (old
	// types an upcaster renames into a handled one).
	Types []string
	// Tables are the read-model tables the projection owns, declared so
	// that replay can rebuild them under shadow names.
	Tables []Table
	// Apply writes the read model in the store's database, in the runner's
	// transaction: its writes and the checkpoint commit together, so each
	// event is applied exactly once. Use tx.Table(name) for table names.
	Apply func(ctx context.Context, tx *Tx, e envelope.Event) error
	// ApplyBatch, optional beside Apply, applies several events (in
	// position order) in one call, so that a read model that aggregates
	// writes each row once per batch instead of once per event. It must
	// leave the read model exactly as Apply on each event in turn would.
	// Replay rebuilds with it (and, should it fail, applies the batch
	// event by event to name the failing one); a Runner applies event by
	// event, its retries and quarantine being per event.
	ApplyBatch func(ctx context.Context, tx *Tx, events []envelope.Event) error
	// Deliver hands an event to a read model that lives elsewhere. It is
	// at-least-once: after a crash an event may come again, with the same
	// position, for the read model's own dedupe. Set Apply or Deliver,
	// not both.
	Deliver func(ctx context.Context, e envelope.Event) error
}

// Table is a read-model table and the SQL that creates it and its
// indexes, with {table} standing for the table's name (the live name, or
// a shadow name during a rebuild). Name index {table}_something so shadow
// indexes do not collide with live ones.
type Table struct {
	Name string
	// Schema is the DDL for every dialect that Schemas has no entry for.
	Schema string
	// Schemas, optional, holds DDL for one dialect (store.DialectSQLite,
	// store.DialectPostgres), in place of Schema on that dialect. The
	// store's dialect (tx.Dialect()) picks the DDL when the table is
	// created; a table without DDL for it is refused with a
	// *MissingSchemaError before any table is created.
	Schemas map[store.Dialect]string
}

// ddl returns the table's DDL for dialect d: its Schemas entry, else the
// default Schema.
func (t Table) ddl(d store.Dialect) (string, bool) {
	if s, ok := t.Schemas[d]; ok && s != "" {
		return s, true
	}
	return t.Schema, t.Schema != ""
}

// ErrMissingSchema: a projection's table has no DDL for the dialect the
// store runs on. Permanent: declare it (Table.Schemas or Table.Schema).
var ErrMissingSchema = errors.New("projection table has no DDL for the store's dialect")

// MissingSchemaError names the projection, the table and the dialect
// that has no DDL. It matches ErrMissingSchema.
type MissingSchemaError struct {
	Projection string
	Table      string
	Dialect    store.Dialect
}

func (e *MissingSchemaError) Error() string {
	return fmt.Sprintf("projection %s: table %s has no DDL for dialect %s, which this store runs on: set Schemas[%q] or Schema (the default for every dialect)",
		e.Projection, e.Table, e.Dialect, e.Dialect)
}

// Unwrap returns ErrMissingSchema.
func (e *MissingSchemaError) Unwrap() error { return ErrMissingSchema }

// MaxPostgresTableBytes is the longest table name a projection may declare
// on PostgreSQL: a rebuild's shadow table adds "__rb" and a generation to
// it, and PostgreSQL cuts every identifier at 63 bytes without an error,
// which could turn a shadow's name into the live table's.
const MaxPostgresTableBytes = 49

// TableNameError: a projection declared a table whose name the store's
// engine cannot keep apart from its rebuild's shadow (see
// MaxPostgresTableBytes) or would fold to another name (PostgreSQL folds
// unquoted names to lower case).
type TableNameError struct {
	Projection, Table string
	Dialect           store.Dialect
	Reason            string
}

func (e *TableNameError) Error() string {
	return fmt.Sprintf("projection %s: table %q on %s: %s", e.Projection, e.Table, e.Dialect, e.Reason)
}

// checkTableName applies the dialect's rules for a table name.
func checkTableName(projection, name string, d store.Dialect) error {
	if d != store.DialectPostgres {
		return nil
	}
	switch {
	case len(name) > MaxPostgresTableBytes:
		return &TableNameError{Projection: projection, Table: name, Dialect: d, Reason: fmt.Sprintf("%d bytes, more than %d: a rebuild's shadow name would be cut at PostgreSQL's 63 and could become the live table's; choose a shorter name", len(name), MaxPostgresTableBytes)}
	case strings.ToLower(name) != name:
		return &TableNameError{Projection: projection, Table: name, Dialect: d, Reason: "has capital letters, which PostgreSQL folds to lower case in unquoted SQL: use a lowercase name"}
	}
	return nil
}

// Tx is the runner's transaction as a projection's Apply sees it: the
// SQL calls of the store's transaction, a nested scope, the engine's
// dialect and catalog, and the names of the projection's tables. It offers
// nothing else: a handler writes its own tables, and the runner keeps the
// projection's checkpoint, quarantine and status itself, in the same
// transaction. It is valid only while Apply or ApplyBatch runs.
type Tx struct {
	tx     *store.Tx
	tables map[string]string
}

// ExecContext runs a statement in the transaction (store.Tx.ExecContext).
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return tx.tx.ExecContext(ctx, query, args...)
}

// QueryContext runs a query in the transaction; it sees the transaction's
// own writes. Close the rows before the handler returns
// (store.Tx.QueryContext).
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return tx.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a query that returns at most one row
// (store.Tx.QueryRowContext).
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return tx.tx.QueryRowContext(ctx, query, args...)
}

// Nested runs fn as a scope of the transaction whose writes are undone
// when fn fails, keeping the transaction usable (store.Tx.Nested).
func (tx *Tx) Nested(ctx context.Context, fn func() error) error {
	return tx.tx.Nested(ctx, fn)
}

// Dialect names the engine that runs the store (store.Tx.Dialect).
func (tx *Tx) Dialect() store.Dialect { return tx.tx.Dialect() }

// TableExists reports whether a table of that name exists, from the
// engine's catalog (store.Tx.TableExists). Pass tx.Table(name) for one of
// the projection's declared tables.
func (tx *Tx) TableExists(ctx context.Context, name string) (bool, error) {
	return tx.tx.TableExists(ctx, name)
}

// Table returns the name to use in SQL for one of the projection's
// declared tables: the live table in a runner, its shadow in a rebuild.
// An undeclared name is returned unchanged.
func (tx *Tx) Table(name string) string {
	if n, ok := tx.tables[name]; ok {
		return n
	}
	return name
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,62}$`)

// ErrReservedTable: a projection declared a table whose name belongs to
// eventlite (one of the tables or indexes its migrations create, in any
// case) or to SQLite (sqlite_...). It is store.ErrReservedTable.
var ErrReservedTable = store.ErrReservedTable

// Validate checks the definition.
func (p *Projection) Validate() error {
	switch {
	case !nameRE.MatchString(p.Name):
		return fmt.Errorf("projection name %q: want a letter then letters, digits or _ (at most 63)", p.Name)
	case count(p.Handlers != nil, p.Apply != nil, p.Deliver != nil) != 1:
		return fmt.Errorf("projection %s: set exactly one of Handlers, Apply and Deliver", p.Name)
	case p.Handlers != nil && p.ApplyBatch != nil:
		return fmt.Errorf("projection %s: ApplyBatch goes with Apply, not with Handlers", p.Name)
	case p.Handlers != nil && (p.Handlers.reg == nil || len(p.Handlers.byGo) == 0):
		return fmt.Errorf("projection %s: Handlers need a registry and at least one handler: make them with NewHandlers(reg), then call On", p.Name)
	case p.Deliver != nil && len(p.Tables) > 0:
		return fmt.Errorf("projection %s: Tables are for Apply read models in the store's database", p.Name)
	}
	for _, t := range p.Tables {
		if !nameRE.MatchString(t.Name) || t.Schema == "" && len(t.Schemas) == 0 || t.Schema != "" && !strings.Contains(t.Schema, "{table}") {
			return fmt.Errorf("projection %s: table %q needs a plain name and DDL that uses {table}: Schema (every dialect) or Schemas (per dialect)", p.Name, t.Name)
		}
		for d, ddl := range t.Schemas {
			if !d.Known() {
				return fmt.Errorf("projection %s: table %q: Schemas has DDL for dialect %q, which eventlite does not know: use store.DialectSQLite or store.DialectPostgres", p.Name, t.Name, d)
			}
			if !strings.Contains(ddl, "{table}") {
				return fmt.Errorf("projection %s: table %q: Schemas[%q] needs DDL that uses {table}", p.Name, t.Name, d)
			}
		}
		if store.ReservedName(t.Name) {
			return fmt.Errorf("projection %s: table %q: %w: choose another name (prefix it with the projection's, say)", p.Name, t.Name, ErrReservedTable)
		}
	}
	return nil
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// Applies reports whether the projection writes a read model in the
// store's database (Handlers or Apply), which a replay can rebuild.
func (p *Projection) Applies() bool { return p.Handlers != nil || p.Apply != nil }

// EventTypes returns the event types the projection reads: its Types and
// its handlers' types; nil means every type.
func (p *Projection) EventTypes() []string {
	if p.Handlers == nil || len(p.Types) == 0 && len(p.Handlers.types) == 0 {
		return p.Types
	}
	types := slices.Clone(p.Types)
	for _, t := range p.Handlers.types {
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types
}

// apply runs the projection's handler for one event.
func (p *Projection) apply(ctx context.Context, tx *Tx, e envelope.Event) error {
	if p.Handlers != nil {
		return p.Handlers.apply(ctx, tx, e)
	}
	return p.Apply(ctx, tx, e)
}

// liveTables maps each declared table to itself.
func (p *Projection) liveTables() map[string]string {
	m := make(map[string]string, len(p.Tables))
	for _, t := range p.Tables {
		m[t.Name] = t.Name
	}
	return m
}

// createTables creates the declared tables under the given names with
// the DDL of the store's dialect (a table already there is left alone).
// A table without DDL for the dialect is a *MissingSchemaError, found
// before any table is created.
func (p *Projection) createTables(ctx context.Context, s *store.Store, tx *store.Tx, names map[string]string) error {
	d := tx.Dialect()
	ddls := make([]string, len(p.Tables))
	for i, t := range p.Tables {
		ddl, ok := t.ddl(d)
		if !ok {
			return &MissingSchemaError{Projection: p.Name, Table: t.Name, Dialect: d}
		}
		if err := checkTableName(p.Name, t.Name, d); err != nil {
			return err
		}
		ddls[i] = ddl
	}
	for i, t := range p.Tables {
		name := names[t.Name]
		ok, err := tx.TableExists(ctx, name)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, strings.ReplaceAll(ddls[i], "{table}", name)); err != nil {
			return fmt.Errorf("projection %s: create table %s: %w", p.Name, name, err)
		}
	}
	return nil
}

// applyTx applies one event with the tables named by names, inside tx,
// in a nested scope (tx.Nested): on error (or panic) the event's writes
// are undone and the transaction stays usable.
func (p *Projection) applyTx(ctx context.Context, tx *store.Tx, names map[string]string, e envelope.Event) error {
	return tx.Nested(ctx, func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("projection %s panicked on position %d: %v", p.Name, e.Position, r)
			}
		}()
		return p.apply(ctx, &Tx{tx: tx, tables: names}, e)
	})
}

// Matches reports whether the projection reads events of type t.
func (p *Projection) Matches(t string) bool {
	types := p.EventTypes()
	return len(types) == 0 || slices.Contains(types, t)
}

// LeaseResource is the lease a runner of the projection holds.
func LeaseResource(name string) string { return "projection:" + name }
