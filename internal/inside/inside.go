// Package inside is the one boundary between eventlite's packages: what
// they need of each other that an application must not call.
//
// It holds no engine code: the bookkeeping it opens is the same on both
// engines.
//
// The store's bookkeeping in a write transaction (checkpoints and their
// fences, outbox marks and failures, the consumer inbox and its deferred
// events, quarantine records, rebuild state, table swaps, projection
// status, holes, the operation ledger's writes) is not a method of
// store.Tx: an application's handler or Update closure cannot reach it.
// eventlite's own packages reach it with
//
//	b := store.Bookkeeping(inside.Key{}, tx)
//	err := b.SetCheckpoint(ctx, name, position, &lease)
//
// The same key opens the effect ledger's state machine
// (effect.Steps: Reserve, Begin, Complete, Fail, MarkUnknown), which an
// application takes only through effect.Ledger's Do, Run and
// ResumeApproved,
// and what package projection keeps for its siblings:
// projection.Rebuilding (a projection's table operations, for replay's
// rebuilder) and projection.ConsumerParts (a consumer's store and logger,
// for natsjs's consumer loop).
//
// store.Bookkeeping takes a Key, and only a package of this module can
// name Key: Go refuses to import an internal package from outside the tree
// it is in. Inside the module, the packages that may import this one are
// listed in allow_test.go (store's domain packages, projection, publish,
// replay, natsjs, serve, aggregate, internal/command (for aggregate and
// decision), metrics, the CLI, the lease holder and the test helpers);
// examples/ may not.
package inside

// Key opens the store's bookkeeping (store.Bookkeeping). Its zero value is
// the key: holding the type is what counts. Its unexported field keeps it
// from being spelled as a literal of another package: without it, the
// untyped struct{}{} would be assignable to Key, and any program could
// pass one.
type Key struct{ _ struct{} }
