package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// readBalances reads the whole balances table.
func readBalances(t *testing.T, path string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, path, &store.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := map[string]int64{}
	err = s.View(ctx, func(tx *store.ReadTx) error {
		rows, err := tx.QueryContext(ctx, `SELECT account, balance FROM balances`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var acc string
			var bal int64
			if err := rows.Scan(&acc, &bal); err != nil {
				return err
			}
			got[acc] = bal
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The demo runs, prints what each command did and the published events,
// and "replay balances" rebuilds the same balances: on a SQLite file and,
// with EVENTLITE_TEST_POSTGRES, on a PostgreSQL schema, with the same
// handler SQL (? placeholders, an aliased upsert).
func TestDemoAndReplay(t *testing.T) {
	for _, eng := range []struct {
		name string
		path func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "bank.db") }},
		{"postgres", func(t *testing.T) string { return storetest.PostgresSchema(t, storetest.PostgresBase(t)) }},
	} {
		t.Run(eng.name, func(t *testing.T) { testDemoAndReplay(t, eng.path(t)) })
	}
}

func testDemoAndReplay(t *testing.T, path string) {
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"--db", path}, &out, &errOut); code != 0 {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, &out, &errOut)
	}
	for _, want := range []string{
		"deposit 100 to acc-1     (op dep-1):    already done: version 2, balance 100",
		"withdraw 500 from acc-1  (op wd-2):     refused: insufficient funds: balance 70, asked 500",
		"withdraw 20 from acc-1   (op wd-3):     refused, the account changed since the form was shown:",
		`"type":"account.withdrawn","subject":"acc-1"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, &out)
		}
	}
	if n := strings.Count(out.String(), `"specversion":"1.0"`); n != 5 {
		t.Errorf("the relay published %d events, want 5:\n%s", n, &out)
	}
	want := map[string]int64{"acc-1": 70, "acc-2": 50}
	if diff := cmp.Diff(want, readBalances(t, path)); diff != "" {
		t.Errorf("balances (-want +got):\n%s", diff)
	}

	out.Reset()
	if code := run(ctx, []string{"--db", path, "replay", "balances"}, &out, &errOut); code != 0 {
		t.Fatalf("replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, &out, &errOut)
	}
	if !strings.Contains(out.String(), "replay balances: rebuilt 5 events") {
		t.Errorf("replay output:\n%s", &out)
	}
	if diff := cmp.Diff(want, readBalances(t, path)); diff != "" {
		t.Errorf("balances after replay (-want +got):\n%s", diff)
	}
}

// A retried command returns its first result and appends nothing; a
// withdrawal the rule refuses appends nothing either.
func TestRetryAndRule(t *testing.T) {
	ctx := context.Background()
	b, err := OpenBank(ctx, filepath.Join(t.TempDir(), "bank.db"), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, _, err := b.Do(ctx, "acc-1", "open-1", store.Any, OpenAccount{Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	first, bal, err := b.Do(ctx, "acc-1", "dep-1", store.Any, Deposit{Amount: 100})
	if err != nil || bal != 100 || first.Replayed {
		t.Fatalf("deposit: %+v, balance %d, %v", first, bal, err)
	}
	head := func() int64 {
		h, err := b.Store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := head()

	again, bal, err := b.Do(ctx, "acc-1", "dep-1", store.Any, Deposit{Amount: 100})
	if err != nil || !again.Replayed || bal != 100 {
		t.Fatalf("retry: %+v, balance %d, %v; want the first result replayed, balance 100", again, bal, err)
	}
	if diff := cmp.Diff(first.Positions, again.Positions); diff != "" || again.Version != first.Version {
		t.Errorf("retry's result differs from the first (-first +retry):\n%s version %d, %d", diff, first.Version, again.Version)
	}
	if _, _, err := b.Do(ctx, "acc-1", "dep-1", store.Any, Deposit{Amount: 5}); !errors.Is(err, store.ErrIdempotencyMismatch) {
		t.Errorf("same op id, other amount: %v, want ErrIdempotencyMismatch", err)
	}
	if _, _, err := b.Do(ctx, "acc-1", "wd-1", store.Any, Withdraw{Amount: 101}); !errors.Is(err, ErrInsufficientFunds) {
		t.Errorf("overdraft: %v, want ErrInsufficientFunds", err)
	}
	// The form showed version 1; the account is at 2: refused at once.
	if _, _, err := b.Do(ctx, "acc-1", "wd-2", store.Exact(1), Withdraw{Amount: 10}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("stale form: %v, want a conflict", err)
	}
	if h := head(); h != before {
		t.Errorf("head moved from %d to %d: a retry or a refused command appended", before, h)
	}
	if bal, err := b.Balance(ctx, "acc-1"); err != nil || bal != 100 {
		t.Errorf("balance %d, %v; want 100", bal, err)
	}
}
