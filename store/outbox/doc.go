// Package outbox reads a store's outbox and acts on its dead letters: the
// relay's reads, the outbox's depth, lag and totals, the dead letters the
// relay gave up on (list, retry, discard) and the streams they park.
//
//	ob := outbox.For(s)
//	st, err := ob.Stats(ctx)
//	dls, err := ob.DeadLetters(ctx, "acme")
//	_, err = ob.RetryDeadLetter(ctx, "acme", dls[0].EventID)
//
// The outbox is the relay's ledger: an append writes nothing to it, and
// an event is pending until the relay (package publish) settles it. The
// relay marks rows published, failed or dead in its own fenced
// transaction; an application only reads the outbox and resolves dead
// letters. A dead letter parks its stream (the stream's later events
// wait, so a stream is published in order) until an operator retries or
// discards it. docs/operations.md says how to run the relay and resolve
// dead letters (eventlite dlq).
package outbox
