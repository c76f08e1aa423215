package store

// Aggregates is what package aggregate keeps beside the events, reached
// with Store.Aggregates: the streams' snapshots (LoadSnapshot, written
// with tx.SaveSnapshot) and the operation ledger of idempotent commands
// (Operation, written with Bookkeeping's RecordOperation; the HTTP server's
// Idempotency-Key appends use the same ledger). The reads here are from
// the read pool and may be stale by the time the caller acts: decide
// inside Update with Bookkeeping's Operation.
type Aggregates struct{ s *Store }

// Aggregates returns the store's snapshots and operation ledger.
func (s *Store) Aggregates() *Aggregates { return &Aggregates{s: s} }
