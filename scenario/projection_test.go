package scenario_test

import (
	"context"
	"errors"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/scenario"
)

var errTooLarge = errors.New("amount too large for the read model")

// balances is a typed read model: one row per tenant and account. Its SQL
// numbers its parameters ($1), which both engines take.
func balances(reg *envelope.Registry) projection.Projection {
	h := projection.NewHandlers(reg)
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[Opened]) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("balances")+` (tenant, account, owner, balance) VALUES ($1, $2, $3, 0)`, e.Tenant, e.Stream, e.Data.Owner)
		return err
	})
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[Deposited]) error {
		_, err := tx.ExecContext(ctx, `UPDATE `+tx.Table("balances")+` SET balance = balance + $1 WHERE tenant = $2 AND account = $3`, e.Data.Amount, e.Tenant, e.Stream)
		return err
	})
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[Withdrawn]) error {
		if e.Data.Amount > 1000 {
			return errTooLarge
		}
		_, err := tx.ExecContext(ctx, `UPDATE `+tx.Table("balances")+` SET balance = balance - $1 WHERE tenant = $2 AND account = $3`, e.Data.Amount, e.Tenant, e.Stream)
		return err
	})
	return projection.Projection{
		Name:     "balances",
		Handlers: h,
		Tables: []projection.Table{{Name: "balances", Schema: `CREATE TABLE {table} (
			tenant TEXT NOT NULL, account TEXT NOT NULL, owner TEXT NOT NULL, balance BIGINT NOT NULL,
			PRIMARY KEY (tenant, account))`}},
	}
}

const balancesQuery = `SELECT tenant, account, balance FROM balances ORDER BY tenant, account`

// Events across streams and tenants, one of an old schema version.
func TestProjectionThenRows(t *testing.T) {
	reg := registry()
	scenario.Projection(t, reg, balances(reg)).
		Given(
			scenario.On("acc-1", Opened{Owner: "alice"}),
			scenario.On("acc-1", Deposited{Amount: 100}),
			scenario.Event{Tenant: "acme", Stream: "acc-1", Data: Opened{Owner: "bob"}},
			scenario.Stored(envelope.Event{Tenant: "acme", Stream: "acc-1",
				Type: "account.deposited", DataSchema: "https://bank.example/schemas/account.deposited/v1", Data: []byte(`{"cents":500}`)}),
			scenario.On("acc-1", Withdrawn{Amount: 30}),
		).
		ThenRows(balancesQuery,
			scenario.Row{"acme", "acc-1", 5},
			scenario.Row{"default", "acc-1", 70},
		)
}

func TestProjectionThenQuarantined(t *testing.T) {
	reg := registry()
	scenario.Projection(t, reg, balances(reg)).
		Given(
			scenario.On("acc-1", Opened{Owner: "alice"}),
			scenario.On("acc-1", Deposited{Amount: 5000}),
			scenario.On("acc-1", Withdrawn{Amount: 2000}),
		).
		ThenQuarantined(3, projection.ReasonHandlerError)
}

// Data that does not decode is quarantined as uninterpretable, at once.
func TestProjectionThenQuarantinedUninterpretable(t *testing.T) {
	reg := registry()
	scenario.Projection(t, reg, balances(reg)).
		Given(
			scenario.On("acc-1", Opened{Owner: "alice"}),
			scenario.Stored(envelope.Event{Type: "account.withdrawn", Stream: "acc-1", Data: []byte(`{"amount":"many"}`)}),
		).
		ThenQuarantined(2, projection.ReasonUninterpretable)
}

// A read model off by one row: the failure names the row, the column,
// expected and got.
func TestProjectionFailureOffByOneRow(t *testing.T) {
	reg := registry()
	f := runFake(t, "TestBalancesOffByOne", func(st scenario.T) {
		scenario.Projection(st, reg, balances(reg)).
			Given(
				scenario.On("acc-1", Opened{Owner: "alice"}),
				scenario.On("acc-2", Opened{Owner: "bob"}),
				scenario.On("acc-2", Deposited{Amount: 7}),
			).
			ThenRows(balancesQuery,
				scenario.Row{"default", "acc-1", 0},
			)
	})
	f.mustFail(t,
		"projection balances given 3 events",
		"live (runner): "+balancesQuery,
		"expected 1 row, got 2 rows",
		`row 2: expected none, got ("default", "acc-2", 7)`)

	f = runFake(t, "TestBalancesWrongValue", func(st scenario.T) {
		scenario.Projection(st, reg, balances(reg)).
			Given(scenario.On("acc-1", Opened{Owner: "alice"}), scenario.On("acc-1", Deposited{Amount: 7})).
			ThenRows(balancesQuery, scenario.Row{"default", "acc-1", 8})
	})
	f.mustFail(t, `row 1: column balance: expected 8, got 7 (row ("default", "acc-1", 7))`)
}

func TestProjectionFailureWrongQuarantine(t *testing.T) {
	reg := registry()
	f := runFake(t, "TestNoQuarantine", func(st scenario.T) {
		scenario.Projection(st, reg, balances(reg)).
			Given(scenario.On("acc-1", Opened{Owner: "alice"}), scenario.On("acc-1", Withdrawn{Amount: 2000})).
			ThenQuarantined(1, projection.ReasonHandlerError)
	})
	f.mustFail(t,
		"expected a quarantine at given event 1 (scenario_test.Opened{Owner:alice} on default/acc-1), got one at given event 2 (scenario_test.Withdrawn{Amount:2000} on default/acc-1): amount too large for the read model",
		"rebuild (replay): expected it to fail at given event 1")
}

// A handler that reads something outside the log (here a flag flipped
// after the live run) makes the rebuild disagree: the kit says so.
func TestProjectionFailureRebuildDisagrees(t *testing.T) {
	reg := registry()
	p := balances(reg)
	runs := 0
	h := projection.NewHandlers(reg)
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[Opened]) error {
		runs++
		_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("balances")+` (tenant, account, owner, balance) VALUES ($1, $2, $3, $4)`, e.Tenant, e.Stream, e.Data.Owner, runs)
		return err
	})
	p.Handlers = h
	f := runFake(t, "TestImpure", func(st scenario.T) {
		scenario.Projection(st, reg, p).
			Given(scenario.On("acc-1", Opened{Owner: "alice"})).
			ThenRows(balancesQuery, scenario.Row{"default", "acc-1", 1})
	})
	f.mustFail(t, "the rebuild (replay) disagrees with the live read model", "row 1: column balance: live 1, rebuilt 2")
}
