package scenario_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/scenario"
	"github.com/eventlite/eventlite/store"
)

func TestAggregateThenEvents(t *testing.T) {
	scenario.Aggregate(t, accountDef()).
		Given(Opened{Owner: "alice"}, Deposited{Amount: 100}).
		When(Withdraw{Amount: 30}).
		Then(Withdrawn{Amount: 30})
}

func TestAggregateThenError(t *testing.T) {
	scenario.Aggregate(t, accountDef()).
		Given(Opened{Owner: "alice"}, Deposited{Amount: 10}).
		When(Withdraw{Amount: 30}).
		ThenError(errFunds)
}

// Command.Expected: a command decided on version 1 of an account at 2 gets
// the *store.ConflictError, through errors.As.
func TestAggregateExpectedThenErrorAs(t *testing.T) {
	var conflict *store.ConflictError
	scenario.Aggregate(t, accountDef()).
		Given(Opened{Owner: "alice"}, Deposited{Amount: 10}).
		When(aggregate.Command{Stream: "account-1", Expected: store.Exact(1), Payload: Withdraw{Amount: 5}}).
		ThenError(&conflict)
	if conflict == nil || conflict.Actual != 2 {
		t.Errorf("errors.As target holds %+v, want the conflict at version 2", conflict)
	}
}

func TestAggregateThenNothing(t *testing.T) {
	scenario.Aggregate(t, accountDef()).
		Given(Opened{Owner: "alice"}).
		When(Open{Owner: "alice"}).
		ThenNothing()
}

// A given event of schema version 1, in its stored form, is upcast as the
// handler reads it: the state has 2.50 from 250 cents.
func TestAggregateGivenStoredOldVersion(t *testing.T) {
	old := envelope.Event{Type: "account.deposited", DataSchema: "https://bank.example/schemas/account.deposited/v1", Data: []byte(`{"cents":250}`)}
	scenario.Aggregate(t, accountDef()).
		Given(Opened{Owner: "alice"}, scenario.Stored(old)).
		When(Withdraw{Amount: 3}).
		ThenError(errFunds)
	scenario.Aggregate(t, accountDef()).
		Given(Opened{Owner: "alice"}, scenario.Stored(old)).
		When(Withdraw{Amount: 2}).
		Then(Withdrawn{Amount: 2})
}

// Metadata is compared only when asked for; cmp options reach the data.
func TestAggregateAskedMetadataAndOptions(t *testing.T) {
	cmd := aggregate.Command{Stream: "account-7", ID: "cmd-1", CorrelationID: "corr-1", Payload: Deposit{Amount: 5}}
	scenario.Aggregate(t, accountDef()).
		When(cmd).
		Then(scenario.Event{Stream: "account-7", Data: Deposited{Amount: 5}, CorrelationID: "corr-1", CausationID: "cmd-1"})
	scenario.Aggregate(t, accountDef()).
		When(cmd).
		Options(cmpopts.IgnoreFields(Deposited{}, "Amount")).
		Then(scenario.On("account-7", Deposited{Amount: 999}))

	f := runFake(t, "TestAskedCorrelation", func(st scenario.T) {
		scenario.Aggregate(st, accountDef()).
			When(cmd).
			Then(scenario.Event{Stream: "account-7", Data: Deposited{Amount: 5}, CorrelationID: "other"})
	})
	f.mustFail(t, `event 1 (account.deposited on account-7): correlation id: expected "other", got "corr-1"`)
}

// A command with an operation id is retried in the scenario: the retry
// returns the first result and appends nothing.
func TestAggregateOperationRetry(t *testing.T) {
	scenario.Aggregate(t, accountDef()).
		Given(Opened{Owner: "alice"}).
		When(aggregate.Command{OperationID: "dep-1", Payload: Deposit{Amount: 7}}).
		Then(Deposited{Amount: 7})
}

// forgetful drops a command's operation id: a retry appends again, which
// the scenario must report.
type forgetful struct{ h scenario.CommandHandler }

func (f forgetful) Handle(ctx context.Context, cmd aggregate.Command) (aggregate.Result, error) {
	cmd.OperationID = ""
	return f.h.Handle(ctx, cmd)
}

func TestAggregateRetryThatAppendsAgainFails(t *testing.T) {
	def := accountDef()
	f := runFake(t, "TestForgetful", func(st scenario.T) {
		scenario.AggregateOf(st, def.Registry, func(s *store.Store) (scenario.CommandHandler, error) {
			h, err := aggregate.New(s, def, nil)
			return forgetful{h}, err
		}).
			Given(scenario.On("account-1", Opened{Owner: "alice"})).
			When(aggregate.Command{Stream: "account-1", OperationID: "dep-1", Payload: Deposit{Amount: 7}}).
			Then(Deposited{Amount: 7})
	})
	f.mustFail(t, `the retry of operation "dep-1" appended 1 event:`, "account.deposited on account-1: scenario_test.Deposited{Amount:7 Memo:}")
}

// The failure messages a person reads: a wrong expected event names the
// event, the field, expected and got.
func TestAggregateFailureWrongEvent(t *testing.T) {
	f := runFake(t, "TestWithdrawWrongAmount", func(st scenario.T) {
		scenario.Aggregate(st, accountDef()).
			Given(Opened{Owner: "alice"}, Deposited{Amount: 100}).
			When(Withdraw{Amount: 30}).
			Then(Withdrawn{Amount: 20})
	})
	f.mustFail(t,
		"when scenario_test.Withdraw{Amount:30} on account-1",
		"event 1 (account.withdrawn on account-1): data differs (-expected +got):",
		"-", "Amount: 20", "+", "Amount: 30")
}

func TestAggregateFailureWrongTypeAndCount(t *testing.T) {
	f := runFake(t, "TestWrongType", func(st scenario.T) {
		scenario.Aggregate(st, accountDef()).
			Given(Opened{Owner: "alice"}, Deposited{Amount: 100}).
			When(Withdraw{Amount: 30}).
			Then(Deposited{Amount: 30}, Withdrawn{Amount: 30})
	})
	f.mustFail(t,
		"expected 2 events, got 1 event",
		"event 1: type: expected account.deposited (scenario_test.Deposited{Amount:30 Memo:}), got account.withdrawn (scenario_test.Withdrawn{Amount:30}) on account-1",
		"event 2: expected scenario_test.Withdrawn{Amount:30} on account-1, got none")
}

func TestAggregateFailureMissingError(t *testing.T) {
	f := runFake(t, "TestOverdraftAllowed", func(st scenario.T) {
		scenario.Aggregate(st, accountDef()).
			Given(Opened{Owner: "alice"}, Deposited{Amount: 100}).
			When(Withdraw{Amount: 30}).
			ThenError(errFunds)
	})
	f.mustFail(t,
		`expected an error matching "insufficient funds" (errors.Is), got no error`,
		"and the command appended 1 event:",
		"account.withdrawn on account-1: scenario_test.Withdrawn{Amount:30}")
}

func TestAggregateFailureUnexpectedError(t *testing.T) {
	f := runFake(t, "TestUnexpected", func(st scenario.T) {
		scenario.Aggregate(st, accountDef()).
			When(Withdraw{Amount: 30}).
			Then(Withdrawn{Amount: 30})
	})
	f.mustFail(t, "expected 1 event, got the error: insufficient funds: balance 0, asked 30")
}
