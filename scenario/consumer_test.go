package scenario_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/scenario"
	"github.com/eventlite/eventlite/store"
)

const accountsDDL = `CREATE TABLE accounts (tenant TEXT NOT NULL, account TEXT NOT NULL, balance BIGINT NOT NULL, PRIMARY KEY (tenant, account))`

const accountsQuery = `SELECT tenant, account, balance FROM accounts ORDER BY tenant, account`

// delta is what an account event does to the balance.
func delta(reg *envelope.Registry, e envelope.Event) (int64, bool, error) {
	v, err := reg.Decode(e)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %v", projection.ErrUninterpretable, err)
	}
	switch d := v.(type) {
	case Opened:
		return 0, true, nil
	case Deposited:
		return d.Amount, false, nil
	case Withdrawn:
		return -d.Amount, false, nil
	}
	return 0, false, fmt.Errorf("%w: %s", projection.ErrUninterpretable, e.Type)
}

// accounts writes its effect in the consumer's transaction: duplicates
// and failed transactions leave nothing twice.
func accounts(reg *envelope.Registry, firstSeen bool) func(scenario.Env) projection.ConsumerOptions {
	return func(scenario.Env) projection.ConsumerOptions {
		return projection.ConsumerOptions{
			Name:             "accounts",
			StartAtFirstSeen: firstSeen,
			Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
				d, open, err := delta(reg, e)
				if err != nil {
					return err
				}
				if open {
					_, err = tx.ExecContext(ctx, `INSERT INTO accounts (tenant, account, balance) VALUES ($1, $2, 0)`, e.Tenant, e.Stream)
				} else {
					_, err = tx.ExecContext(ctx, `UPDATE accounts SET balance = balance + $1 WHERE tenant = $2 AND account = $3`, d, e.Tenant, e.Stream)
				}
				return err
			},
		}
	}
}

func TestConsumerShuffledAndDuplicated(t *testing.T) {
	reg := registry()
	scenario.Consumer(t, reg, accounts(reg, false)).
		Schema(accountsDDL).
		Given(
			scenario.At("acc-1", 1, Opened{Owner: "alice"}),
			scenario.At("acc-1", 2, Deposited{Amount: 100}),
			scenario.At("acc-1", 3, Withdrawn{Amount: 30}),
			scenario.Delivery{Tenant: "acme", Stream: "acc-1", Version: 1, Data: Opened{Owner: "bob"}},
			scenario.Delivery{Tenant: "acme", Stream: "acc-1", Version: 2, Data: Deposited{Amount: 5}},
		).
		ThenRows(accountsQuery, scenario.Row{"acme", "acc-1", 5}, scenario.Row{"default", "acc-1", 70})
}

// A gap that never fills: the event after it waits, deferred, until the
// fake clock passes DeferFor and the sweep quarantines it.
func TestConsumerGapQuarantinedBySweep(t *testing.T) {
	reg := registry()
	scenario.Consumer(t, reg, accounts(reg, false)).
		Schema(accountsDDL).
		Given(
			scenario.At("acc-1", 1, Opened{Owner: "alice"}),
			scenario.At("acc-1", 3, Deposited{Amount: 100}),
		).
		Quarantined("acc-1-v3").
		ThenRows(accountsQuery, scenario.Row{"default", "acc-1", 0})
}

// Two events claim version 2: the first delivered wins, whatever the
// shuffle, because the kit keeps them in their given order.
func TestConsumerVersionConflictKeepsOrder(t *testing.T) {
	reg := registry()
	scenario.Consumer(t, reg, accounts(reg, false)).
		Schema(accountsDDL).
		Given(
			scenario.At("acc-1", 1, Opened{Owner: "alice"}),
			scenario.Delivery{Stream: "acc-1", Version: 2, ID: "first", Data: Deposited{Amount: 100}},
			scenario.Delivery{Stream: "acc-1", Version: 2, ID: "second", Data: Deposited{Amount: 999}},
		).
		ThenRows(accountsQuery, scenario.Row{"default", "acc-1", 100})
}

// StartAtFirstSeen depends on the order: the kit does not shuffle it (it
// still duplicates and fails transactions).
func TestConsumerStartAtFirstSeenNotShuffled(t *testing.T) {
	reg := registry()
	scenario.Consumer(t, reg, accounts(reg, true)).
		Schema(accountsDDL, `INSERT INTO accounts (tenant, account, balance) VALUES ('default', 'acc-1', 50)`).
		Given(
			scenario.At("acc-1", 7, Deposited{Amount: 10}),
			scenario.At("acc-1", 8, Withdrawn{Amount: 5}),
		).
		ThenRows(accountsQuery, scenario.Row{"default", "acc-1", 55})
}

// The planted bug: a handler that writes its effect in a transaction of
// its own (another database), outside the consumer's. In order it looks
// right; a transaction that fails after it returned, and the broker's
// redelivery, apply it twice, and the shuffled runs must say so.
func TestConsumerFindsEffectOutsideTheTransaction(t *testing.T) {
	reg := registry()
	given := []scenario.Delivery{
		scenario.At("acc-1", 1, Opened{Owner: "alice"}),
		scenario.At("acc-1", 2, Deposited{Amount: 100}),
		scenario.At("acc-1", 3, Withdrawn{Amount: 30}),
		scenario.At("acc-1", 4, Deposited{Amount: 1}),
	}
	build, read := planted(reg)
	// In order, once each, the bug does not show.
	f := runFake(t, "TestPlantedInOrder", func(st scenario.T) {
		scenario.Consumer(st, reg, build).Given(given...).Runs(0).
			ThenRowsFrom(read, scenario.Row{"acc-1", 71})
	})
	f.mustPass(t)

	f = runFake(t, "TestPlanted", func(st scenario.T) {
		scenario.Consumer(st, reg, build).Given(given...).Seed(1).
			ThenRowsFrom(read, scenario.Row{"acc-1", 71})
	})
	f.mustFail(t,
		"(seed 1; EVENTLITE_SEED=1 replays)",
		"failed after Apply returned",
		"read model:",
		"row 1: column balance: expected 71, got ")
	if len(f.logs) == 0 || f.logs[0] != "scenario TestPlanted: seed 1 (EVENTLITE_SEED=1 to replay)" {
		t.Errorf("the seed was not printed: %q", f.logs)
	}

	// The same seed finds it again, in the same orders.
	again := runFake(t, "TestPlanted", func(st scenario.T) {
		scenario.Consumer(st, reg, build).Given(given...).Seed(1).
			ThenRowsFrom(read, scenario.Row{"acc-1", 71})
	})
	if again.output() != f.output() {
		t.Errorf("seed 1 twice, two different failures:\n%s\n---\n%s", f.output(), again.output())
	}
}

// planted is a consumer whose Apply writes its effect in a transaction of
// its own, on another database in the run's directory, and the reader of
// that database.
func planted(reg *envelope.Registry) (func(scenario.Env) projection.ConsumerOptions, func(context.Context, scenario.Env) ([]string, []scenario.Row, error)) {
	build := func(env scenario.Env) projection.ConsumerOptions {
		return projection.ConsumerOptions{
			Name: "accounts",
			Apply: func(ctx context.Context, _ *store.Tx, e envelope.Event) error {
				d, open, err := delta(reg, e)
				if err != nil {
					return err
				}
				db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(filepath.Join(env.Dir, "effects.db")))
				if err != nil {
					return err
				}
				defer db.Close()
				own, err := db.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer own.Rollback()
				if _, err := own.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS accounts (account TEXT PRIMARY KEY, balance INTEGER NOT NULL)`); err != nil {
					return err
				}
				if open {
					_, err = own.ExecContext(ctx, `INSERT INTO accounts (account, balance) VALUES (?, 0) ON CONFLICT (account) DO NOTHING`, e.Stream)
				} else {
					_, err = own.ExecContext(ctx, `UPDATE accounts SET balance = balance + ? WHERE account = ?`, d, e.Stream)
				}
				if err != nil {
					return err
				}
				return own.Commit()
			},
		}
	}
	read := func(ctx context.Context, env scenario.Env) ([]string, []scenario.Row, error) {
		db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(filepath.Join(env.Dir, "effects.db")))
		if err != nil {
			return nil, nil, err
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, `SELECT account, balance FROM accounts ORDER BY account`)
		if err != nil {
			return nil, nil, err
		}
		defer rows.Close()
		var out []scenario.Row
		for rows.Next() {
			var acc string
			var bal int64
			if err := rows.Scan(&acc, &bal); err != nil {
				return nil, nil, err
			}
			out = append(out, scenario.Row{acc, bal})
		}
		return []string{"account", "balance"}, out, rows.Err()
	}
	return build, read
}
