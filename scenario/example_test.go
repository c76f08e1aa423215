package scenario_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/eventlite/eventlite/scenario"
)

// exampleT stands in for the *testing.T a test passes: an Example has
// none. It prints what a scenario reports.
type exampleT struct {
	name     string
	failed   bool
	cleanups []func()
}

func (e *exampleT) Helper()      {}
func (e *exampleT) Name() string { return e.name }
func (e *exampleT) Errorf(format string, args ...any) {
	e.failed = true
	fmt.Printf(format+"\n", args...)
}
func (e *exampleT) Fatalf(format string, args ...any) {
	e.failed = true
	panic(fmt.Sprintf(format, args...))
}
func (e *exampleT) Cleanup(fn func()) { e.cleanups = append(e.cleanups, fn) }
func (e *exampleT) TempDir() string {
	d, err := os.MkdirTemp("", "example-")
	if err != nil {
		panic(err)
	}
	e.Cleanup(func() { os.RemoveAll(d) })
	return d
}
func (e *exampleT) done() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	fmt.Println(strings.TrimPrefix(e.name, "Example"), "passed:", !e.failed)
}

// Given an account's past events, when a command, then the new events.
// In a test, t is the test's *testing.T.
func ExampleAggregate() {
	t := &exampleT{name: "ExampleAggregate"}
	defer t.done()

	scenario.Aggregate(t, accountDef()).
		Given(Opened{Owner: "alice"}, Deposited{Amount: 100}).
		When(Withdraw{Amount: 30}).
		Then(Withdrawn{Amount: 30})

	scenario.Aggregate(t, accountDef()).
		Given(Opened{Owner: "alice"}).
		When(Withdraw{Amount: 30}).
		ThenError(errFunds)
	// Output: Aggregate passed: true
}

// Given events on several streams and tenants, then the read model's
// rows, live through a runner and again through a rebuild.
func ExampleProjection() {
	t := &exampleT{name: "ExampleProjection"}
	defer t.done()

	reg := registry()
	scenario.Projection(t, reg, balances(reg)).
		Given(
			scenario.On("acc-1", Opened{Owner: "alice"}),
			scenario.On("acc-1", Deposited{Amount: 100}),
			scenario.Event{Tenant: "acme", Stream: "acc-9", Data: Opened{Owner: "bob"}},
		).
		ThenRows(`SELECT tenant, account, balance FROM balances ORDER BY tenant, account`,
			scenario.Row{"acme", "acc-9", 0},
			scenario.Row{"default", "acc-1", 100},
		)
	// Output: Projection passed: true
}

// Given outside events, then the consumer's read model: in order, then
// shuffled, duplicated and with failed transactions (seeded).
func ExampleConsumer() {
	t := &exampleT{name: "ExampleConsumer"}
	defer t.done()

	reg := registry()
	scenario.Consumer(t, reg, accounts(reg, false)).
		Schema(accountsDDL).
		Seed(42).
		Given(
			scenario.At("acc-1", 1, Opened{Owner: "alice"}),
			scenario.At("acc-1", 2, Deposited{Amount: 100}),
			scenario.At("acc-1", 3, Withdrawn{Amount: 30}),
		).
		ThenRows(`SELECT tenant, account, balance FROM accounts ORDER BY account`,
			scenario.Row{"default", "acc-1", 70},
		)
	// Output: Consumer passed: true
}
