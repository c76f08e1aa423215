package main

import (
	"testing"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/scenario"
	"github.com/eventlite/eventlite/store"
)

// The account aggregate's rules, as given/when/then scenarios: each runs
// on a fresh store (and on PostgreSQL too with EVENTLITE_TEST_POSTGRES).

func account() aggregate.Definition[Account] {
	return accounts(registry())
}

// A deposit with an operation id: the kit sends it twice, and the retry
// must return the first result and append nothing.
func TestDeposit(t *testing.T) {
	scenario.Aggregate(t, account()).
		Given(AccountOpened{Owner: "alice"}).
		When(aggregate.Command{Stream: "acc-1", OperationID: "dep-1", Payload: Deposit{Amount: 100}}).
		Then(scenario.On("acc-1", MoneyDeposited{Amount: 100}))
}

func TestWithdraw(t *testing.T) {
	scenario.Aggregate(t, account()).
		Given(AccountOpened{Owner: "alice"}, MoneyDeposited{Amount: 100}).
		When(Withdraw{Amount: 30}).
		Then(MoneyWithdrawn{Amount: 30})
}

// The business rule: no overdraft.
func TestOverdraftRefused(t *testing.T) {
	scenario.Aggregate(t, account()).
		Given(AccountOpened{Owner: "alice"}, MoneyDeposited{Amount: 100}).
		When(Withdraw{Amount: 101}).
		ThenError(ErrInsufficientFunds)
}

// The form showed version 1; the account is at 2: refused at once.
func TestStaleFormRefused(t *testing.T) {
	var conflict *store.ConflictError
	scenario.Aggregate(t, account()).
		Given(AccountOpened{Owner: "alice"}, MoneyDeposited{Amount: 100}).
		When(aggregate.Command{Expected: store.Exact(1), Payload: Withdraw{Amount: 10}}).
		ThenError(&conflict)
}

func TestNoAccountNoDeposit(t *testing.T) {
	scenario.Aggregate(t, account()).
		When(Deposit{Amount: 5}).
		ThenError(ErrNoAccount)
}

func TestOpenTwiceDoesNothing(t *testing.T) {
	scenario.Aggregate(t, account()).
		Given(AccountOpened{Owner: "alice"}).
		When(OpenAccount{Owner: "alice"}).
		ThenNothing()
}

// The balances read model, across accounts and tenants, live and rebuilt.
func TestBalances(t *testing.T) {
	reg := registry()
	scenario.Projection(t, reg, balances(reg)).
		Given(
			scenario.On("acc-1", AccountOpened{Owner: "alice"}),
			scenario.On("acc-1", MoneyDeposited{Amount: 100}),
			scenario.On("acc-2", AccountOpened{Owner: "bob"}),
			scenario.On("acc-1", MoneyWithdrawn{Amount: 30}),
			scenario.Event{Tenant: "other-bank", Stream: "acc-1", Data: AccountOpened{Owner: "carol"}},
		).
		ThenRows(`SELECT tenant, account, owner, balance FROM balances ORDER BY tenant, account`,
			scenario.Row{"default", "acc-1", "alice", 70},
			scenario.Row{"default", "acc-2", "bob", 0},
			scenario.Row{"other-bank", "acc-1", "carol", 0},
		)
}
