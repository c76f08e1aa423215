package sqlitedriver

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The writer remembers what its appends read and wrote (each stream's
// lifecycle row and version, the log's last position, whether a scavenge
// removed ids of a tenant) and answers the next transaction's StreamState
// from that instead of a statement, when nothing else changed the file
// in between: a one-event append then runs BEGIN, INSERT and COMMIT, as
// the lightest event store does, and no more.
//
// "Nothing else changed the file" is SQLite's data version
// (SQLITE_FCNTL_DATA_VERSION), which changes with every commit to the
// file by any connection of any process, this one's included, and with a
// checkpoint that resets the WAL. The writer reads it after its own
// commit, and again once BEGIN IMMEDIATE holds the write lock: equal, no
// other write came between, and what the cache holds is the file's state.
// A transaction the writer did not see whole (an Update closure runs its
// own SQL: Track(false); a failed statement; a rolled-back scope) empties
// the cache at its end instead. Reads inside a transaction go to the
// database for any stream this transaction read or wrote already.
//
// The cache answers StreamState only. Whether an append's erasure
// subject was forgotten (SealedUnder) is always a statement: a forget
// committed by another process must be seen by the next append even if
// a data version check were ever wrong or skipped.

type stateCache struct {
	// valid: streams, last and removed hold the file's state as of data
	// version version.
	valid   bool
	version uint32
	streams map[streamKey]driver.StreamState // Row, Deleted, Version
	last    int64                            // last position handed out
	removed map[string]bool                  // tenant -> a scavenge removed ids

	// The transaction Begin opened: tracked while the writer saw every
	// write; tx is what its StreamState calls read and its writes left,
	// to become the cache at the commit.
	tracked bool
	tx      map[streamKey]driver.StreamState
	txLast  int64
	txRem   map[string]bool
	hits    int64
}

type streamKey struct{ tenant, stream string }

// maxCachedStreams bounds the cache: past it, it starts over.
const maxCachedStreams = 4096

// dataVersion reads SQLite's data version of the main database.
func (w *writer) dataVersion() (uint32, error) {
	var v uint32
	err := w.conn.Raw(func(dc any) error {
		c, ok := dc.(interface {
			FileControlDataVersion(string) (uint32, error)
		})
		if !ok {
			return fmt.Errorf("sqlitedriver: %T has no data version", dc)
		}
		var err error
		v, err = c.FileControlDataVersion("main")
		return err
	})
	return v, err
}

// drop empties the cache.
func (c *stateCache) drop() {
	c.valid = false
	clear(c.streams)
	clear(c.removed)
	c.last = 0
}

// Begin runs BEGIN IMMEDIATE, then checks the cache against the data
// version. The transaction starts untracked: Track(true) says the store
// writes through the Writer only.
func (w *writer) Begin(ctx context.Context) error {
	if err := w.beginTx(ctx); err != nil {
		return err
	}
	c := &w.cache
	c.tracked = false
	clear(c.tx)
	clear(c.txRem)
	c.txLast = 0
	if c.valid {
		if v, err := w.dataVersion(); err != nil || v != c.version {
			c.drop()
		}
	}
	return nil
}

// Track: see driver.Writer.
func (w *writer) Track(on bool) {
	c := &w.cache
	if !on {
		c.tracked = false
		return
	}
	if c.tx == nil {
		c.tx, c.txRem = map[streamKey]driver.StreamState{}, map[string]bool{}
		c.streams, c.removed = map[streamKey]driver.StreamState{}, map[string]bool{}
	}
	c.tracked = true // right after Begin, which emptied the transaction's state
}

// Commit runs COMMIT; the transaction's reads and writes become the
// cache when the writer saw them all, and the cache is dropped when not.
func (w *writer) Commit(ctx context.Context) error {
	c := &w.cache
	if err := w.commitTx(ctx); err != nil {
		c.drop()
		return err
	}
	if !c.tracked {
		c.drop()
		return nil
	}
	v, err := w.dataVersion()
	if err != nil {
		c.drop()
		return nil
	}
	if !c.valid || len(c.streams)+len(c.tx) > maxCachedStreams {
		c.drop()
	}
	for k, st := range c.tx {
		c.streams[k] = st
	}
	for t, r := range c.txRem {
		c.removed[t] = r
	}
	if c.txLast != 0 {
		c.last = c.txLast
	}
	c.valid, c.version = true, v
	c.tracked = false
	return nil
}

// Rollback runs ROLLBACK. The file is as it was: the cache stands (the
// next Begin checks it).
func (w *writer) Rollback(ctx context.Context) error {
	w.cache.tracked = false
	return w.rollbackTx(ctx)
}

// RollbackTo rolls back to the savepoint: what the transaction's tracked
// writes left may be undone, so it is no longer tracked.
func (w *writer) RollbackTo(ctx context.Context, sp driver.Scope) error {
	w.cache.tracked = false
	return w.rollbackToScope(ctx, sp)
}

// StreamState answers from the cache when it holds the stream, the
// transaction has neither read nor written it, and (with head) has
// handed out no position yet; otherwise it runs StreamStateSQL.
func (w *writer) StreamState(ctx context.Context, tenant, stream string, head bool) (driver.StreamState, error) {
	c := &w.cache
	k := streamKey{tenant, stream}
	if c.tracked && c.valid {
		_, seen := c.tx[k]
		st, ok := c.streams[k]
		rem, remOK := c.removed[tenant]
		if !seen && ok && remOK && (!head || (c.txLast == 0 && c.last != 0)) {
			if head {
				st.LastPosition = c.last
			}
			c.tx[k] = driver.StreamState{Row: st.Row, Deleted: st.Deleted, Version: st.Version}
			c.txRem[tenant] = rem
			w.removedIDs = rem
			c.hits++
			return st, nil
		}
	}
	st, err := w.queryStreamState(ctx, tenant, stream, head)
	if err != nil {
		c.tracked = false
		return st, err
	}
	if c.tracked {
		c.tx[k] = driver.StreamState{Row: st.Row, Deleted: st.Deleted, Version: st.Version}
		c.txRem[tenant] = w.removedIDs
		if head && c.txLast == 0 {
			c.txLast = st.LastPosition
		}
	}
	return st, nil
}

// InsertEvents inserts the batch (insertBatch) and notes the stream's
// new version and the last position.
func (w *writer) InsertEvents(ctx context.Context, b driver.EventBatch) error {
	err := w.insertBatch(ctx, b)
	if err == nil {
		err = w.insertTags(ctx, b)
	}
	c := &w.cache
	if err != nil || !c.tracked || len(b.Events) == 0 {
		c.tracked = c.tracked && err == nil
		return err
	}
	k := streamKey{b.Tenant, b.Stream}
	st, ok := c.tx[k]
	if !ok {
		c.tracked = false // written without being read: not the store's way
		return nil
	}
	st.Version = b.Events[len(b.Events)-1].StreamVersion
	c.tx[k] = st
	c.txLast = b.FirstPosition + int64(len(b.Events)) - 1
	return nil
}

// CreateStream inserts the streams row.
func (w *writer) CreateStream(ctx context.Context, tenant, stream string, now int64) error {
	err := w.insertStreamRow(ctx, tenant, stream, now)
	w.noteRow(tenant, stream, err)
	return err
}

// ReviveStream clears the soft delete.
func (w *writer) ReviveStream(ctx context.Context, tenant, stream string) error {
	err := w.reviveStreamRow(ctx, tenant, stream)
	w.noteRow(tenant, stream, err)
	return err
}

// noteRow notes a live streams row written for the stream.
func (w *writer) noteRow(tenant, stream string, err error) {
	c := &w.cache
	if !c.tracked {
		return
	}
	k := streamKey{tenant, stream}
	st, ok := c.tx[k]
	if err != nil || !ok {
		c.tracked = false
		return
	}
	st.Row, st.Deleted = true, 0
	c.tx[k] = st
}

// StateCacheHits counts the StreamState calls the cache answered (for
// tests: the cache must serve, not only stay out of the way).
func (w *writer) StateCacheHits() int64 { return w.cache.hits }
