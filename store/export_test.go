package store

import (
	"context"
	"strings"

	"github.com/eventlite/eventlite/store/internal/sqlitedriver"
)

// Pragmas lets the tests ask every connection for its settings.
func Pragmas(ctx context.Context, s *Store) (map[string]string, error) { return s.pragmas(ctx) }

// CheckpointTruncate runs wal_checkpoint(TRUNCATE) through the store.
func CheckpointTruncate(ctx context.Context, s *Store) (bool, error) {
	return s.checkpointTruncate(ctx)
}

// NestedName is the savepoint name of a Nested scope at depth (1 for the
// outermost), for tests that break a scope on purpose.
func NestedName(depth int) string {
	return strings.TrimPrefix(sqlitedriver.Exec{}.Scope(depth).Release, "RELEASE ")
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
