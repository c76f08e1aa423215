package store

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Pragmas lets the tests ask every connection for its settings.
func Pragmas(ctx context.Context, s *Store) (map[string]string, error) { return s.pragmas(ctx) }

// CheckpointTruncate runs wal_checkpoint(TRUNCATE) through the store.
func CheckpointTruncate(ctx context.Context, s *Store) (bool, error) {
	return s.checkpointTruncate(ctx)
}

// ExecBehind runs q through the writer's connection inside tx's
// transaction, behind the store's back: a caller's transaction control
// through the Tx is refused (ErrTxControl), so tests that break a scope
// on purpose, or benchmark savepoints run by hand, go this way.
func ExecBehind(ctx context.Context, tx *Tx, q string) error {
	_, err := tx.s.wconn.ExecContext(ctx, q)
	return err
}

// ReleaseScopeBehind releases the Nested scope at depth behind the
// store's back, as a fault would: the scope can then not be undone.
func ReleaseScopeBehind(ctx context.Context, tx *Tx, depth int) error {
	return ExecBehind(ctx, tx, tx.s.ex.Scope(depth).Release)
}

// SetRebuildWarnEvents sets the log size from which a table-rebuilding
// migration warns, and returns a function that restores it.
func SetRebuildWarnEvents(n int64) func() {
	old := rebuildWarnEvents
	rebuildWarnEvents = n
	return func() { rebuildWarnEvents = old }
}

// WriterQueued is how many requests wait in the writer's queue, taken by
// no one yet (one its caller withdrew counts until the writer skips it).
func WriterQueued(s *Store) int { return len(s.queue) }

// WriterPending counts the write submissions that have not returned.
func WriterPending(s *Store) int64 { return s.w.pending.Load() }

// SetScavengeCheckpoint replaces what a scavenge's WAL checkpoint
// answered (a fault a test injects), and returns a function that removes
// the replacement.
func SetScavengeCheckpoint(f func(busy bool, logFrames, done int64, err error) (bool, int64, int64, error)) func() {
	scavengeHooks.checkpoint = f
	return func() { scavengeHooks.checkpoint = nil }
}

// Classify is classify: err's driver.Class as its engine tells it.
func Classify(err error) driver.Class { return classify(err) }
