package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// TestTxControlRefused: SQL an Update closure runs through its Tx may not
// begin, commit or roll back the transaction, or open, release or roll
// back to a savepoint, in any spelling or hidden after another statement:
// the statement is refused with ErrTxControl and not run, the closure's
// other writes stand, and the transaction stays the store's.
func TestTxControlRefused(t *testing.T) {
	for name, s := range groupTestStores(t) {
		t.Run(name, func(t *testing.T) { testTxControlRefused(t, s, name) })
	}
}

func testTxControlRefused(t *testing.T, s *Store, engine string) {
	ctx := context.Background()
	ph := "?"
	if engine == "postgres" {
		ph = "$1"
	}
	if err := s.Update(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE notes (n INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		"COMMIT", "commit", "  Commit Transaction ", "END", "ROLLBACK", "/* undo */ rollback", "ROLLBACK TRANSACTION",
		"BEGIN", "BEGIN IMMEDIATE", "SAVEPOINT x", "RELEASE a", "RELEASE SAVEPOINT a", "ROLLBACK TO a",
		"ROLLBACK TRANSACTION TO SAVEPOINT a", "INSERT INTO notes VALUES (99); COMMIT",
	}
	type call struct {
		name string
		run  func(tx *Tx, q string) error
	}
	calls := []call{
		{"ExecContext", func(tx *Tx, q string) error { _, err := tx.ExecContext(ctx, q); return err }},
		{"QueryContext", func(tx *Tx, q string) error {
			rows, err := tx.QueryContext(ctx, q)
			if err == nil {
				rows.Close()
			}
			return err
		}},
		{"QueryRowContext", func(tx *Tx, q string) error {
			var v any
			err := tx.QueryRowContext(ctx, q).Scan(&v)
			if errors.Is(err, sql.ErrNoRows) {
				err = nil
			}
			return err
		}},
	}
	n := 0
	for _, c := range calls {
		for _, q := range stmts {
			n++
			id := fmt.Sprintf("ev-%d", n)
			err := s.Update(ctx, func(tx *Tx) error {
				if _, err := tx.Append(ctx, "acme", "s", Any, envelope.Event{ID: id, Source: "/t", Type: "t.x"}); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO notes VALUES (`+ph+`)`, n); err != nil {
					return err
				}
				err := c.run(tx, q)
				if !errors.Is(err, ErrTxControl) {
					t.Errorf("%s(%q): %v, want ErrTxControl", c.name, q, err)
				} else if !strings.Contains(err.Error(), "not run") {
					t.Errorf("%s(%q): %v does not say what happened", c.name, q, err)
				}
				// Ignored: the closure goes on, as a careless one would.
				_, err = tx.ExecContext(ctx, `UPDATE notes SET n = n WHERE n = `+ph, n)
				return err
			})
			if err != nil {
				t.Fatalf("%s(%q): Update: %v", c.name, q, err)
			}
			if _, err := s.EventByID(ctx, "acme", id); err != nil {
				t.Errorf("%s(%q): the closure's append: %v", c.name, q, err)
			}
		}
	}
	var notes, stray int
	if err := s.Update(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM notes WHERE n != 99`).Scan(&notes); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM notes WHERE n = 99`).Scan(&stray)
	}); err != nil {
		t.Fatal(err)
	}
	if notes != n {
		t.Errorf("%d closure writes stored, want %d", notes, n)
	}
	// The statement before a refused one in the same string: SQLite
	// compiles and runs them in turn, so it ran, inside the closure's
	// transaction, and committed with it; PostgreSQL's query is refused
	// whole before it is sent.
	want := len(calls)
	if engine == "postgres" {
		want = 0
	}
	if stray != want {
		t.Errorf("statements before a refused one: %d stored, want %d", stray, want)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Error(err)
	}
}

// TestTxControlInGroup: a closure that runs ROLLBACK (or COMMIT) and goes
// on as if nothing happened, inside a group commit, does not take its
// neighbours' appends with it: they were acknowledged, so they must be
// stored, and so must the closure's own writes.
func TestTxControlInGroup(t *testing.T) {
	for _, stmt := range []string{"ROLLBACK", "COMMIT"} {
		for name, s := range groupTestStores(t) {
			t.Run(stmt+"/"+name, func(t *testing.T) {
				ctx := context.Background()
				ev := func(id string) envelope.Event { return envelope.Event{ID: id, Source: "/test", Type: "t.happened"} }
				g := &handGroup{t: t, s: s, ctx: ctx}
				g.append("s0", ev("before"))
				var refused error
				g.add(&request{fn: func(tx *Tx) error {
					if _, err := tx.Append(ctx, "acme", "s1", Any, ev("in-closure")); err != nil {
						return err
					}
					_, refused = tx.ExecContext(ctx, stmt)
					return nil
				}})
				g.append("s2", ev("after"))
				g.run()
				for i, r := range g.reqs {
					if r.err != nil {
						t.Errorf("request %d: %v", i, r.err)
					}
				}
				if !errors.Is(refused, ErrTxControl) {
					t.Errorf("the closure's %s: %v, want ErrTxControl", stmt, refused)
				}
				for i, id := range []string{"before", "in-closure", "after"} {
					e, err := s.EventByID(ctx, "acme", id)
					if err != nil {
						t.Errorf("event %q: %v", id, err)
					} else if e.Position != int64(i+1) {
						t.Errorf("event %q at position %d, want %d", id, e.Position, i+1)
					}
				}
				if err := s.CheckInvariants(ctx); err != nil {
					t.Error(err)
				}
			})
		}
	}
}
