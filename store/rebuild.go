package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Rebuild is a projection's rebuild in progress (package replay drives
// it): shadow copies of the projection's tables, named
// <table>__rb<Generation>, that hold every matching event of the log up to
// Checkpoint.
type Rebuild struct {
	Projection string
	// Generation names the shadow tables. A new rebuild (a first one, one
	// from scratch, or the next one after a swap) takes a new generation;
	// a resumed one keeps its own.
	Generation int64
	// Checkpoint: the shadow has applied every matching event up to and
	// including this position.
	Checkpoint int64
	// Watermark is the log head when the latest run of the rebuild began.
	Watermark int64
	// Applied counts the events applied to the shadow since the
	// generation began, over every run.
	Applied   int64
	StartedAt time.Time // when the generation began
	UpdatedAt time.Time
}

// ShadowTable is the name of table's shadow in generation gen.
func ShadowTable(table string, gen int64) string {
	return fmt.Sprintf("%s__rb%d", table, gen)
}

const selectRebuild = `SELECT projection, generation, checkpoint, watermark, applied, started_at, updated_at FROM rebuilds`

func scanRebuild(r scanner) (Rebuild, error) {
	var rb Rebuild
	var started, updated int64
	if err := r.Scan(&rb.Projection, &rb.Generation, &rb.Checkpoint, &rb.Watermark, &rb.Applied, &started, &updated); err != nil {
		return Rebuild{}, err
	}
	rb.StartedAt, rb.UpdatedAt = time.Unix(0, started).UTC(), time.Unix(0, updated).UTC()
	return rb, nil
}

// LoadRebuild returns the projection's rebuild in progress; ok is false
// when there is none.
func (s *Store) LoadRebuild(ctx context.Context, projection string) (rb Rebuild, ok bool, err error) {
	rb, err = scanRebuild(s.rdb.QueryRowContext(ctx, selectRebuild+` WHERE projection = ?`, projection))
	if errors.Is(err, sql.ErrNoRows) {
		return Rebuild{}, false, nil
	}
	if err != nil {
		return Rebuild{}, false, fmt.Errorf("load rebuild of %s: %w", projection, mapErr(err))
	}
	return rb, true, nil
}

// LoadRebuild is LoadRebuild inside an Update closure.
func (tx *Tx) LoadRebuild(ctx context.Context, projection string) (rb Rebuild, ok bool, err error) {
	if err := tx.check(); err != nil {
		return Rebuild{}, false, err
	}
	s := tx.s
	rb, err = scanRebuild(s.wconn.QueryRowContext(ctx, selectRebuild+` WHERE projection = ?`, projection))
	if errors.Is(err, sql.ErrNoRows) {
		return Rebuild{}, false, nil
	}
	if err != nil {
		return Rebuild{}, false, fmt.Errorf("load rebuild of %s: %w", projection, mapErr(err))
	}
	return rb, true, nil
}

// Rebuilds lists every rebuild in progress (or left behind by a run that
// failed or was killed), by projection name.
func (s *Store) Rebuilds(ctx context.Context) ([]Rebuild, error) {
	rows, err := s.rdb.QueryContext(ctx, selectRebuild+` ORDER BY projection`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []Rebuild
	for rows.Next() {
		rb, err := scanRebuild(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rb)
	}
	return out, mapErr(rows.Err())
}

// NewRebuildGeneration hands out the projection's next rebuild
// generation: never one handed out before, even after the rebuild row is
// gone (a swapped-in table keeps its shadow's index names).
func (tx *Tx) NewRebuildGeneration(ctx context.Context, projection string) (int64, error) {
	if err := tx.check(); err != nil {
		return 0, err
	}
	s := tx.s
	var gen int64
	err := s.wconn.QueryRowContext(ctx, `INSERT INTO rebuild_generations (projection, generation) VALUES (?, 1)
		ON CONFLICT (projection) DO UPDATE SET generation = generation + 1
		RETURNING generation`, projection).Scan(&gen)
	if err != nil {
		return 0, fmt.Errorf("new rebuild generation for %s: %w", projection, mapErr(err))
	}
	return gen, nil
}

// SaveRebuild writes the projection's rebuild row (inserting or
// replacing it), stamping UpdatedAt with the transaction's time and
// StartedAt with it too when zero.
func (tx *Tx) SaveRebuild(ctx context.Context, rb Rebuild) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if rb.Projection == "" || rb.Generation <= 0 {
		return errors.New("store: tx.SaveRebuild needs a projection and a generation")
	}
	started := tx.now
	if !rb.StartedAt.IsZero() {
		started = rb.StartedAt.UnixNano()
	}
	_, err := s.wconn.ExecContext(ctx, `INSERT INTO rebuilds (projection, generation, checkpoint, watermark, applied, started_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (projection) DO UPDATE SET generation = excluded.generation, checkpoint = excluded.checkpoint,
			watermark = excluded.watermark, applied = excluded.applied, started_at = excluded.started_at, updated_at = excluded.updated_at`,
		rb.Projection, rb.Generation, rb.Checkpoint, rb.Watermark, rb.Applied, started, tx.now)
	if err != nil {
		return fmt.Errorf("save rebuild of %s: %w", rb.Projection, mapErr(err))
	}
	return nil
}

// DeleteRebuild removes the projection's rebuild row (its generation
// stays used).
func (tx *Tx) DeleteRebuild(ctx context.Context, projection string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if _, err := s.wconn.ExecContext(ctx, `DELETE FROM rebuilds WHERE projection = ?`, projection); err != nil {
		return fmt.Errorf("delete rebuild of %s: %w", projection, mapErr(err))
	}
	return nil
}

// CountEvents counts the events with after < position <= upto, only
// those of the given types when types is not empty. It reads that range
// of the log (of every type, the smaller of it and the rest: the whole
// log's count comes from its smallest index).
func (s *Store) CountEvents(ctx context.Context, after, upto int64, types []string) (int64, error) {
	q := `SELECT count(*) FROM events WHERE position > ? AND position <= ?`
	args := []any{after, upto}
	if len(types) == 0 {
		// Counting a range walks the table's pages; counting the whole
		// table reads an index a tenth of its size. Most of the log:
		// count the whole and take away the rest.
		q = `SELECT CASE WHEN ?2 - ?1 > (SELECT COALESCE(MAX(position), 0) FROM events) / 2
			THEN (SELECT count(*) FROM events) - (SELECT count(*) FROM events WHERE position <= ?1)
				- (SELECT count(*) FROM events WHERE position > ?2)
			ELSE (SELECT count(*) FROM events WHERE position > ?1 AND position <= ?2) END`
	} else {
		q += ` AND type IN (?` + strings.Repeat(", ?", len(types)-1) + `)`
		for _, t := range types {
			args = append(args, t)
		}
	}
	var n int64
	if err := s.rdb.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count events: %w", mapErr(err))
	}
	return n, nil
}

// ErrReservedTable: tx.DropTable or tx.RenameTable was asked to touch one of
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
			for _, sm := range createRE.FindAllStringSubmatch(m.sql, -1) {
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

// quoteIdent quotes an SQL identifier.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// DropTable drops a read-model table (and its indexes) if it exists.
// eventlite's own tables are refused with ErrReservedTable.
func (tx *Tx) DropTable(ctx context.Context, name string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if err := checkUserTable("drop table", name); err != nil {
		return err
	}
	if _, err := s.wconn.ExecContext(ctx, `DROP TABLE IF EXISTS `+quoteIdent(name)); err != nil {
		return fmt.Errorf("drop table %s: %w", name, mapErr(err))
	}
	return nil
}

// RenameTable renames a read-model table. Its indexes keep their names.
// eventlite's own tables are refused with ErrReservedTable.
func (tx *Tx) RenameTable(ctx context.Context, from, to string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	for _, n := range []string{from, to} {
		if err := checkUserTable("rename table", n); err != nil {
			return err
		}
	}
	if _, err := s.wconn.ExecContext(ctx, `ALTER TABLE `+quoteIdent(from)+` RENAME TO `+quoteIdent(to)); err != nil {
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

type tableShape struct {
	exists bool
	cols   []string
	pk     []string // in primary key order
}

func (s *Store) tableShapeTx(ctx context.Context, name string) (tableShape, error) {
	rows, err := s.wconn.QueryContext(ctx, `SELECT name, pk FROM pragma_table_info(?) ORDER BY cid`, name)
	if err != nil {
		return tableShape{}, mapErr(err)
	}
	defer rows.Close()
	var sh tableShape
	type pkCol struct {
		name string
		pos  int
	}
	var pks []pkCol
	for rows.Next() {
		var col string
		var pk int
		if err := rows.Scan(&col, &pk); err != nil {
			return tableShape{}, err
		}
		sh.exists = true
		sh.cols = append(sh.cols, col)
		if pk > 0 {
			pks = append(pks, pkCol{col, pk})
		}
	}
	if err := rows.Err(); err != nil {
		return tableShape{}, mapErr(err)
	}
	slices.SortFunc(pks, func(a, b pkCol) int { return a.pos - b.pos })
	for _, p := range pks {
		sh.pk = append(sh.pk, p.name)
	}
	return sh, nil
}

func (s *Store) countRowsTx(ctx context.Context, q string) (int64, error) {
	var n sql.NullInt64
	if err := s.wconn.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, mapErr(err)
	}
	return n.Int64, nil
}

// CompareTables compares a live read-model table with its shadow, row by
// row: by the primary key (from PRAGMA table_info) when the table declares
// one, as whole rows otherwise. A live table that does not exist counts
// every shadow row as missing. It reads both tables in full inside the
// write transaction, so both reflect one moment; it holds the writer
// meanwhile.
func (tx *Tx) CompareTables(ctx context.Context, live, shadow string) (TableDiff, error) {
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
	if !sh.exists {
		return fail(fmt.Errorf("table %s: %w", shadow, ErrNotFound))
	}
	lv, err := s.tableShapeTx(ctx, live)
	if err != nil {
		return fail(err)
	}
	L, S := quoteIdent(live), quoteIdent(shadow)
	var d TableDiff
	if !lv.exists {
		if d.Missing, err = s.countRowsTx(ctx, `SELECT count(*) FROM `+S); err != nil {
			return fail(err)
		}
		return d, nil
	}
	if !slices.Equal(lv.cols, sh.cols) || !slices.Equal(lv.pk, sh.pk) {
		d.SchemaDiffers = true
		if d.Missing, err = s.countRowsTx(ctx, `SELECT count(*) FROM `+S); err != nil {
			return fail(err)
		}
		if d.Extra, err = s.countRowsTx(ctx, `SELECT count(*) FROM `+L); err != nil {
			return fail(err)
		}
		return d, nil
	}
	// match builds "a.c1 IS b.c1 AND ..." over cols.
	match := func(a, b string, cols []string) string {
		parts := make([]string, len(cols))
		for i, c := range cols {
			q := quoteIdent(c)
			parts[i] = a + "." + q + " IS " + b + "." + q
		}
		return strings.Join(parts, " AND ")
	}
	if len(sh.pk) == 0 {
		// Multisets of whole rows: how many copies of each row one side
		// has beyond the other.
		cols := make([]string, len(sh.cols))
		for i, c := range sh.cols {
			cols[i] = quoteIdent(c)
		}
		list := strings.Join(cols, ", ")
		surplus := func(a, b string) string {
			return `WITH x AS (SELECT ` + list + `, count(*) AS n__ FROM ` + a + ` GROUP BY ` + list + `),
				y AS (SELECT ` + list + `, count(*) AS n__ FROM ` + b + ` GROUP BY ` + list + `)
				SELECT SUM(MAX(x.n__ - COALESCE(y.n__, 0), 0)) FROM x LEFT JOIN y ON ` + match("x", "y", sh.cols)
		}
		if d.Missing, err = s.countRowsTx(ctx, surplus(S, L)); err != nil {
			return fail(err)
		}
		if d.Extra, err = s.countRowsTx(ctx, surplus(L, S)); err != nil {
			return fail(err)
		}
		return d, nil
	}
	onKey := match("a", "b", sh.pk)
	if d.Missing, err = s.countRowsTx(ctx, `SELECT count(*) FROM `+S+` a WHERE NOT EXISTS (SELECT 1 FROM `+L+` b WHERE `+onKey+`)`); err != nil {
		return fail(err)
	}
	if d.Extra, err = s.countRowsTx(ctx, `SELECT count(*) FROM `+L+` a WHERE NOT EXISTS (SELECT 1 FROM `+S+` b WHERE `+onKey+`)`); err != nil {
		return fail(err)
	}
	var rest []string
	for _, c := range sh.cols {
		if !slices.Contains(sh.pk, c) {
			rest = append(rest, c)
		}
	}
	if len(rest) > 0 {
		if d.Different, err = s.countRowsTx(ctx, `SELECT count(*) FROM `+S+` a JOIN `+L+` b ON `+onKey+` WHERE NOT (`+match("a", "b", rest)+`)`); err != nil {
			return fail(err)
		}
	}
	return d, nil
}
