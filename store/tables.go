package store

import (
	"context"
	"errors"
	"fmt"
	"github.com/eventlite/eventlite/store/internal/driver"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Read-model tables: the SQL a projection's rebuild runs on tables that
// are not eventlite's own, in the rebuilder's Update transaction.

// TableExists reports whether a table of that exact name exists in the
// database; the transaction's own CREATE and DROP count.
func (tx *Tx) TableExists(ctx context.Context, name string) (bool, error) {
	if err := tx.check(); err != nil {
		return false, err
	}
	ok, err := tx.s.ex.TableExists(ctx, tx.s.wconn, name)
	return ok, mapErr(err)
}

// ErrReservedTable: DropTable or RenameTable was asked to touch one of
// eventlite's own tables. Permanent.
var ErrReservedTable = errors.New("table belongs to eventlite")

var (
	reservedOnce sync.Once
	reserved     map[string]bool
	createRE     = regexp.MustCompile(`(?i)CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|VIEW|TRIGGER)\s+(?:IF\s+NOT\s+EXISTS\s+)?["\x60\[]?([A-Za-z_][A-Za-z0-9_]*)`)
)

// ReservedName reports whether name, in any case, is one of the tables,
// indexes, views or triggers eventlite's migrations create, or starts
// with sqlite_. Read models must not use such a name.
func ReservedName(name string) bool { return reservedTable(name) }

// reservedTable reports whether name is one of the tables (or indexes,
// views, triggers) the store's migrations create, or an SQLite internal
// name.
func reservedTable(name string) bool {
	reservedOnce.Do(func() {
		reserved = map[string]bool{}
		ms, _ := migrations()
		for _, m := range ms {
			for _, sm := range createRE.FindAllStringSubmatch(m.SQL, -1) {
				reserved[strings.ToLower(sm[1])] = true
			}
		}
	})
	n := strings.ToLower(name)
	return reserved[n] || strings.HasPrefix(n, "sqlite_")
}

func checkUserTable(op, name string) error {
	if name == "" {
		return fmt.Errorf("store: %s: empty table name", op)
	}
	if reservedTable(name) {
		return fmt.Errorf("store: %s %q: %w", op, name, ErrReservedTable)
	}
	return nil
}

// DropTable drops a read-model table (and its indexes) if it exists.
// eventlite's own tables are refused with ErrReservedTable.
func (tx txBook) DropTable(ctx context.Context, name string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if err := checkUserTable("drop table", name); err != nil {
		return err
	}
	if err := s.ex.DropTable(ctx, s.wconn, name); err != nil {
		return fmt.Errorf("drop table %s: %w", name, mapErr(err))
	}
	return nil
}

// RenameTable renames a read-model table. Its indexes keep their names.
// eventlite's own tables are refused with ErrReservedTable.
func (tx txBook) RenameTable(ctx context.Context, from, to string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	for _, n := range []string{from, to} {
		if err := checkUserTable("rename table", n); err != nil {
			return err
		}
	}
	if err := s.ex.RenameTable(ctx, s.wconn, from, to); err != nil {
		return fmt.Errorf("rename table %s to %s: %w", from, to, mapErr(err))
	}
	return nil
}

// TableDiff is how a live read-model table differs from its shadow.
type TableDiff struct {
	// Missing counts rows in the shadow that the live table lacks.
	Missing int64
	// Extra counts rows in the live table that the shadow lacks.
	Extra int64
	// Different counts rows in both, by primary key, whose other columns
	// differ. Tables without a declared primary key are compared as
	// multisets of whole rows: a changed row is one missing and one extra.
	Different int64
	// SchemaDiffers: the tables' columns or primary keys differ (the
	// projection's schema changed), so rows cannot be matched: every shadow
	// row counts as missing and every live row as extra.
	SchemaDiffers bool
}

// Total is the number of rows that differ.
func (d TableDiff) Total() int64 { return d.Missing + d.Extra + d.Different }

func (s *Store) tableShapeTx(ctx context.Context, name string) (driver.TableShape, error) {
	sh, err := s.ex.TableColumns(ctx, s.wconn, name)
	return sh, mapErr(err)
}

// CompareTables compares a live read-model table with its shadow, row by
// row: by the primary key (from the catalog) when the table declares
// one, as whole rows otherwise. A live table that does not exist counts
// every shadow row as missing. It reads both tables in full inside the
// write transaction, so both reflect one moment; it holds the writer
// meanwhile.
func (tx txBook) CompareTables(ctx context.Context, live, shadow string) (TableDiff, error) {
	if err := tx.check(); err != nil {
		return TableDiff{}, err
	}
	s := tx.s
	fail := func(err error) (TableDiff, error) {
		return TableDiff{}, fmt.Errorf("compare %s with %s: %w", live, shadow, err)
	}
	sh, err := s.tableShapeTx(ctx, shadow)
	if err != nil {
		return fail(err)
	}
	if !sh.Exists {
		return fail(fmt.Errorf("table %s: %w", shadow, ErrNotFound))
	}
	lv, err := s.tableShapeTx(ctx, live)
	if err != nil {
		return fail(err)
	}
	ex, q := s.ex, s.wconn
	var d TableDiff
	if !lv.Exists {
		if d.Missing, err = ex.CountRows(ctx, q, shadow); err != nil {
			return fail(mapErr(err))
		}
		return d, nil
	}
	if !slices.Equal(lv.Cols, sh.Cols) || !slices.Equal(lv.PK, sh.PK) {
		d.SchemaDiffers = true
		if d.Missing, err = ex.CountRows(ctx, q, shadow); err != nil {
			return fail(mapErr(err))
		}
		if d.Extra, err = ex.CountRows(ctx, q, live); err != nil {
			return fail(mapErr(err))
		}
		return d, nil
	}
	if len(sh.PK) == 0 {
		// Multisets of whole rows: how many copies of each row one side
		// has beyond the other.
		if d.Missing, err = ex.CountSurplus(ctx, q, shadow, live, sh.Cols); err != nil {
			return fail(mapErr(err))
		}
		if d.Extra, err = ex.CountSurplus(ctx, q, live, shadow, sh.Cols); err != nil {
			return fail(mapErr(err))
		}
		return d, nil
	}
	if d.Missing, err = ex.CountUnmatched(ctx, q, shadow, live, sh.PK); err != nil {
		return fail(mapErr(err))
	}
	if d.Extra, err = ex.CountUnmatched(ctx, q, live, shadow, sh.PK); err != nil {
		return fail(mapErr(err))
	}
	var rest []string
	for _, c := range sh.Cols {
		if !slices.Contains(sh.PK, c) {
			rest = append(rest, c)
		}
	}
	if len(rest) > 0 {
		if d.Different, err = ex.CountChanged(ctx, q, shadow, live, sh.PK, rest); err != nil {
			return fail(mapErr(err))
		}
	}
	return d, nil
}
