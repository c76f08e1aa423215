// Package store is eventlite's event log, on a SQLite file or in a
// PostgreSQL schema (import store/postgres to link it) with one API:
// appends with optimistic concurrency, reads, the outbox the relay
// drains, and the bookkeeping beside them. The SQL of each engine is its
// driver's; this package runs none of its own.
//
//	s, err := store.Open(ctx, "eventlite.db", nil) // or a postgres:// address; nil: the defaults
//	if err != nil { ... }
//	defer s.Close()
//	e, _ := envelope.New("order.placed", OrderPlaced{Total: 42})
//	res, err := s.Append(ctx, "default", "order-1", store.NoStream, e)
//	for e, err := range s.ReadStream(ctx, "default", "order-1", store.ReadStreamOptions{}) { ... }
//
// What is not the log has a package of its own, each reached with
// For(s) or a package function: store/effect (the effect ledger and
// approvals), store/backup (backup, restore, copy, inspect),
// store/erasure (forget a subject, master keys) and store/lifecycle
// (delete, truncate, retention, scavenge).
//
// Guarantees, in short (docs/guarantees.md has them all, with their
// tests):
//   - An Append that returned nil is durable and visible to every reader;
//     one that returned an error stored nothing.
//   - Per stream, versions are 1, 2, 3, ... with no gap; an append whose
//     expected version does not hold writes nothing (*ConflictError).
//   - Global positions strictly increase in commit order and are never
//     reused.
//   - Every committed event stays pending in the outbox until the relay
//     publishes it or an operator discards it.
//   - Bad input is refused with a typed error and changes nothing.
//
// *Store keeps what a service calls (Open, Append, the reads, Update,
// View) and small handles for the rest. *Tx is what an Update closure or
// a handler does in a write transaction; the store's own bookkeeping
// (checkpoints, outbox marks, the inbox, leases) is not on it, so a
// handler cannot break a guarantee. docs/design.md describes the writer,
// the group commit and the storage seam.
package store
