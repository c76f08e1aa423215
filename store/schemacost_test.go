package store_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// rawWriter is what BenchmarkSchemaCost needs of minDB and rawDB.
type rawWriter interface {
	appendTx(tenant, stream string, evs []rawEvent) error
	Close() error
}

// schemaVariant is the store's schema (its migrations, through the raw
// baseline's statements) with a different page size, or with statements
// run after the migrations, to measure what it would change before
// changing the store for it.
type schemaVariant struct {
	name     string
	pageSize int      // PRAGMA page_size before the first table; 0: SQLite's 4096
	after    []string // run after the migrations, in their transaction
	// bound writes with boundDB (the cheapest statements on the
	// schema) instead of the raw baseline's.
	bound bool
}

// eventsWithoutUniqueIDs rebuilds the (empty) events table without its
// UNIQUE (tenant, event_id): the store's schema without the guarantee
// that event ids are unique per tenant, to measure what the guarantee's
// index costs an append.
var eventsWithoutUniqueIDs = []string{
	`CREATE TABLE events_v (
    position INTEGER PRIMARY KEY, tenant TEXT NOT NULL, stream_id TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1), event_id TEXT NOT NULL, type TEXT NOT NULL,
    source TEXT NOT NULL, time INTEGER NOT NULL, content_type TEXT NOT NULL, attrs BLOB,
    recorded_at INTEGER NOT NULL, data BLOB, UNIQUE (tenant, stream_id, version))`,
	`DROP TABLE events`,
	`ALTER TABLE events_v RENAME TO events`,
}

// createVariant creates path with v's schema, marked as fully migrated so
// that newRawDB opens it as it is.
func createVariant(path string, v schemaVariant) error {
	db, err := sql.Open("sqlite", rawDSN(path, "NORMAL", true))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	files, err := filepath.Glob(filepath.Join("internal", "sqlitedriver", "migrations", "*.sql"))
	if err != nil {
		return err
	}
	slices.Sort(files)
	var q []string
	if v.pageSize > 0 {
		q = append(q, fmt.Sprintf("PRAGMA page_size = %d", v.pageSize))
	}
	q = append(q, "PRAGMA journal_mode = WAL", "BEGIN IMMEDIATE")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		q = append(q, string(b))
	}
	q = append(q, v.after...)
	q = append(q, fmt.Sprintf("PRAGMA user_version = %d", len(files)), "COMMIT")
	for _, s := range q {
		if _, err := db.ExecContext(rawCtx, s); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
	}
	return nil
}

// BenchmarkSchemaCost measures, in raw SQL (the raw baseline's
// statements, NORMAL, one file open at a time, chunks in rotating order),
// what a smaller page size, or the store's schema without the unique
// index of event ids ("noid"), would change: the WAL frames a commit
// writes (fr_<variant>, measured over 200 commits with the
// auto-checkpoint off, after 2,000 one-event appends) and the append rate
// against the minimal table (xmin_<variant>). "store" is the store's
// schema as it is (since migrations 0014 and 0015 an append writes the
// event's row and its two index entries, and a streams row only for a new
// stream: the variants that dropped AUTOINCREMENT and the outbox's
// pending index became the store). "bound" is the store's schema written
// by boundDB, the cheapest statements known for it and nothing else: the
// ceiling of the store's own x_min ("boundnoid": the same without the
// unique index of event ids).
func BenchmarkSchemaCost(b *testing.B) {
	vs := []schemaVariant{
		{name: "store"},
		{name: "page2k", pageSize: 2048},
		{name: "page1k", pageSize: 1024},
		{name: "noid", after: eventsWithoutUniqueIDs},
		{name: "bound", bound: true},
		{name: "boundnoid", bound: true, after: eventsWithoutUniqueIDs},
	}
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			g := newBenchGen(11)
			dir := b.TempDir()
			chunk := 500
			if batch == 100 {
				chunk = 50
			}
			type side struct {
				name   string
				path   string
				open   func() (rawWriter, *sql.Conn, error)
				frames float64
				dur    time.Duration
				evs    int
			}
			var sides []*side
			minPath := filepath.Join(dir, "min.db")
			sides = append(sides, &side{name: "min", path: minPath, open: func() (rawWriter, *sql.Conn, error) {
				m, err := newMinDB(minPath, "NORMAL")
				if err != nil {
					return nil, nil, err
				}
				return m, m.conn, nil
			}})
			for _, v := range vs {
				path := filepath.Join(dir, v.name+".db")
				if err := createVariant(path, v); err != nil {
					b.Fatal(err)
				}
				sides = append(sides, &side{name: v.name, path: path, open: func() (rawWriter, *sql.Conn, error) {
					if v.bound {
						d, err := newBoundDB(path, "NORMAL")
						if err != nil {
							return nil, nil, err
						}
						return d, d.conn, nil
					}
					r, err := newRawDB(path, "NORMAL")
					if err != nil {
						return nil, nil, err
					}
					return r, r.conn, nil
				}})
			}
			stream := func(i int) string { return fmt.Sprintf("order-%03d", i%100) }
			// Frames per commit, untimed: fill each file a little, then
			// keep the WAL of 200 commits.
			b.StopTimer()
			for _, s := range sides {
				w, c, err := s.open()
				if err != nil {
					b.Fatal(err)
				}
				for i := range 2000 {
					if err := w.appendTx("acme", stream(i), g.raw(1)); err != nil {
						b.Fatal(err)
					}
				}
				var ps int
				for _, q := range []string{"PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA wal_autocheckpoint = 0"} {
					if _, err := c.ExecContext(rawCtx, q); err != nil {
						b.Fatal(err)
					}
				}
				if err := c.QueryRowContext(rawCtx, "PRAGMA page_size").Scan(&ps); err != nil {
					b.Fatal(err)
				}
				const commits = 200
				for i := range commits {
					if err := w.appendTx("acme", stream(i), g.raw(batch)); err != nil {
						b.Fatal(err)
					}
				}
				fi, err := os.Stat(s.path + "-wal")
				if err != nil {
					b.Fatal(err)
				}
				s.frames = float64(fi.Size()-32) / float64(24+ps) / commits
				if _, err := c.ExecContext(rawCtx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			for r := range b.N {
				for k := range sides {
					s := sides[(k+r)%len(sides)]
					data := make([][]rawEvent, chunk)
					for i := range data {
						data[i] = g.raw(batch)
					}
					b.StopTimer()
					w, _, err := s.open()
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					t0 := time.Now()
					for i := range chunk {
						if err := w.appendTx("acme", stream(i), data[i]); err != nil {
							b.Fatal(err)
						}
					}
					s.dur += time.Since(t0)
					s.evs += chunk * batch
					b.StopTimer()
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			b.StopTimer()
			rate := func(s *side) float64 { return float64(s.evs) / s.dur.Seconds() }
			for _, s := range sides {
				b.ReportMetric(s.frames, "fr_"+s.name)
				if s.name != "min" {
					b.ReportMetric(rate(s)/rate(sides[0]), "xmin_"+s.name)
				}
			}
		})
	}
}
