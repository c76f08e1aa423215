package scenario_test

import (
	"strings"
	"testing"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/scenario"
)

// A scenario that cannot run says why, through Fatalf, naming the
// scenario and what to do.
func TestScenarioThatCannotRun(t *testing.T) {
	reg := registry()
	type unregistered struct{ X int }
	for _, tc := range []struct {
		name string
		run  func(scenario.T)
		want string
	}{
		{"no command", func(st scenario.T) {
			scenario.Aggregate(st, accountDef()).Given(Opened{Owner: "a"}).Then()
		}, "no command: call When before Then"},
		{"unregistered given", func(st scenario.T) {
			scenario.Aggregate(st, accountDef()).Given(unregistered{1}).When(Deposit{Amount: 1}).ThenNothing()
		}, "given event 1: given scenario_test.unregistered{X:1}: its Go type is not registered"},
		{"ThenError without a target", func(st scenario.T) {
			scenario.Aggregate(st, accountDef()).When(Deposit{Amount: 1}).ThenError(nil)
		}, "ThenError takes an error or a non-nil pointer to an error type, got <nil>"},
		{"quarantine past the given events", func(st scenario.T) {
			scenario.Projection(st, reg, balances(reg)).Given(scenario.On("a", Opened{})).ThenQuarantined(2, projection.ReasonHandlerError)
		}, "ThenQuarantined(2): there are 1 given events, counted from 1"},
		{"delivery without a version", func(st scenario.T) {
			scenario.Consumer(st, reg, accounts(reg, false)).Given(scenario.Delivery{Stream: "a", Data: Opened{}}).ThenRows(accountsQuery)
		}, "given delivery 1: Stream and Version (from 1) are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := runFake(t, "TestInput", tc.run)
			if !strings.Contains(f.fatal, tc.want) || !strings.Contains(f.fatal, "scenario TestInput") {
				t.Errorf("Fatalf said %q, want it to name the scenario and say %q", f.fatal, tc.want)
			}
		})
	}
}

// EVENTLITE_SEED replays a seed: the shuffled runs use it and say so.
func TestConsumerSeedFromEnvironment(t *testing.T) {
	t.Setenv(scenario.SeedEnv, "12345")
	reg := registry()
	f := runFake(t, "TestSeeded", func(st scenario.T) {
		scenario.Consumer(st, reg, accounts(reg, false)).Schema(accountsDDL).Runs(1).
			Given(scenario.At("acc-1", 1, Opened{Owner: "alice"})).
			ThenRows(accountsQuery, scenario.Row{"default", "acc-1", 0})
	})
	f.mustPass(t)
	if len(f.logs) != 1 || !strings.Contains(f.logs[0], "seed 12345 (EVENTLITE_SEED=12345 to replay)") {
		t.Errorf("logs %q, want the seed from %s", f.logs, scenario.SeedEnv)
	}
	t.Setenv(scenario.SeedEnv, "not-a-number")
	f = runFake(t, "TestBadSeed", func(st scenario.T) {
		scenario.Consumer(st, reg, accounts(reg, false)).Given(scenario.At("acc-1", 1, Opened{})).ThenRows(accountsQuery)
	})
	if !strings.Contains(f.fatal, `EVENTLITE_SEED="not-a-number": not an unsigned integer`) {
		t.Errorf("Fatalf said %q", f.fatal)
	}
}
