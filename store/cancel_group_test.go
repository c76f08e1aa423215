package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// TestCancelInsideGroup is the group commit of issue 10 §1, built by hand:
// appends queued before and after an Update closure whose caller is
// cancelled while one of its statements runs, all in one transaction. The
// cancelled closure alone is undone and gets its context's error; every
// append commits and reports it.
func TestCancelInsideGroup(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "group.db"), &Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Update(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE marks (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}

	for _, where := range []string{"in its write", "in its read", "after its statement", "before its statement"} {
		t.Run(where, func(t *testing.T) {
			key := "u " + where
			uctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer SetTestHook(key, func(x int64) error {
				if x == 500 && (where == "in its write" || where == "in its read") {
					cancel()
				}
				return nil
			})()
			var group []*request
			var ids []string
			for i := range 8 {
				e, err := envelope.New("t", map[string]int{"i": i})
				if err != nil {
					t.Fatal(err)
				}
				e.Source = "/test"
				a, err := s.prepareAppend("default", fmt.Sprintf("%s-%d", where, i%3), Any, []envelope.Event{e})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, a.events[0].ID)
				group = append(group, &request{ctx: ctx, a: a, done: make(chan struct{})})
				if i == 3 {
					group = append(group, &request{ctx: uctx, done: make(chan struct{}), fn: func(tx *Tx) error {
						if _, err := tx.ExecContext(uctx, `INSERT INTO marks (k) VALUES (?)`, key); err != nil {
							return err
						}
						if where == "before its statement" {
							cancel()
						}
						if where == "in its read" {
							q, args := LongRead(5000, key)
							var n int
							if err := tx.QueryRowContext(uctx, q, args...).Scan(&n); err != nil {
								return err
							}
						} else {
							q, args := LongWrite("marks", 5000, key)
							if _, err := tx.ExecContext(uctx, q, args...); err != nil {
								return err
							}
						}
						if where == "after its statement" {
							cancel()
						}
						// A closure that ignores its error still does not commit.
						_, _ = tx.ExecContext(uctx, `INSERT INTO marks (k) VALUES (?)`, key+" again")
						return nil
					}})
				}
			}
			s.w.mu.Lock()
			s.runGroup(group)
			s.w.mu.Unlock()

			for _, r := range group {
				<-r.done
				if r.fn != nil {
					if !errors.Is(r.err, context.Canceled) {
						t.Errorf("cancelled Update: got %v, want context.Canceled", r.err)
					}
					continue
				}
				if r.err != nil {
					t.Errorf("append %s beside a cancelled Update: %v", r.a.events[0].ID, r.err)
				}
			}
			for _, id := range ids {
				var n int
				if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE event_id = ?`, id).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("append %s: %d events stored, want 1", id, n)
				}
			}
			var marks int
			if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM marks WHERE k LIKE ?`, key+"%").Scan(&marks); err != nil {
				t.Fatal(err)
			}
			if marks != 0 {
				t.Errorf("the cancelled Update left %d rows", marks)
			}
			if err := s.CheckInvariants(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}
