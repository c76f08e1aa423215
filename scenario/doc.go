// Package scenario tests what a user of eventlite writes (aggregates'
// decisions, projections' read models, consumers of outside events) as
// given/when/then scenarios, each on a fresh store, in a few lines:
//
//	func TestWithdraw(t *testing.T) {
//		scenario.Aggregate(t, accountDefinition).
//			Given(AccountOpened{Owner: "alice"}, MoneyDeposited{Amount: 100}).
//			When(Withdraw{Amount: 30}).
//			Then(MoneyWithdrawn{Amount: 30})
//	}
//
//	func TestBalances(t *testing.T) {
//		scenario.Projection(t, reg, balances(reg)).
//			Given(scenario.On("acc-1", AccountOpened{Owner: "alice"}), scenario.On("acc-1", MoneyDeposited{Amount: 100})).
//			ThenRows(`SELECT account, balance FROM balances ORDER BY account`, scenario.Row{"acc-1", 100})
//	}
//
// Three kinds of scenario:
//   - Aggregate: given past events (registered Go values, or Stored events
//     of an older schema version that the registry's upcasters bring
//     forward), when a command, then the new events (Then), an error
//     (ThenError: errors.Is or errors.As), or nothing (ThenNothing). Events
//     compare as typed values with go-cmp on type, tenant, stream and data;
//     ids, times, positions, correlation and causation ids only when an
//     expected Event sets them. A command with an OperationID is sent
//     again: the retry must return the first result and append nothing.
//     AggregateOf takes any CommandHandler, for other forms of handler.
//   - Projection: given events on any streams and tenants, then the rows of
//     a query (ThenRows) or a quarantine at the Nth given event with a
//     reason (ThenQuarantined). Every scenario applies the events live
//     through a projection.Runner and again through replay.Rebuild, and
//     both must agree.
//   - Consumer: given a sequence of outside events, then the read model.
//     The sequence runs in order, then shuffled, with duplicates and with
//     transactions failed after the consumer's Apply returned (the broker
//     delivers again), from a seed printed and named in every failure
//     (EVENTLITE_SEED replays it). Deferred events wait on a fake clock
//     that the kit moves past DeferFor before the consumer's Sweep.
//     StartAtFirstSeen is not shuffled, and events claiming one version
//     keep their given order: which one wins depends on it.
//
// Guarantees:
//   - Every scenario runs on a fresh store: on SQLite by default, copied
//     from a migrated template file; with EVENTLITE_TEST_POSTGRES set, on
//     PostgreSQL too, in a schema of its own that is dropped afterwards.
//     The kit links no PostgreSQL driver of its own and no NATS.
//   - A failure names the scenario (the test's name, and the engine when
//     several ran), which event, row or column differs, what was expected
//     and what came; a consumer's names the seed and the delivery order.
//
// The kit takes a T (Helper, Errorf, Fatalf, Name, Cleanup, TempDir),
// which *testing.T and *testing.B satisfy.
package scenario
