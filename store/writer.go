package store

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// prepare prepares the append path on the writer's connection: the
// statements of every append, prepared once (see driver.Writer).
func (s *Store) prepare(ctx context.Context) error {
	sctx, err := s.wconn.ctx(ctx)
	if err == nil {
		s.stmts, err = s.ex.PrepareWriter(sctx, s.wconn.Conn)
	}
	if err != nil {
		var oe *driver.OpError
		if errors.As(err, &oe) {
			return fmt.Errorf("store: %s: %w", oe.Op, mapErr(oe.Err))
		}
		return fmt.Errorf("store: prepare statements: %w", err)
	}
	return nil
}

// connLost reports whether err says the writer's connection is gone for
// good. SQLite's never is: it is a file. A server's may be (its session
// ended); database/sql then answers ErrBadConn or ErrConnDone for the
// connection the store keeps, at every later use.
func (s *Store) connLost(err error) bool {
	return s.onServer() && sessionEnded(err)
}

// sessionEnded reports whether err says a server's session is gone:
// database/sql's ErrBadConn and ErrConnDone, or an error the engine
// classes as ConnectionLost.
func sessionEnded(err error) bool {
	return errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || classify(err) == driver.ConnectionLost
}

// reconnectWriter replaces the writer's lost connection and prepares the
// append path on the new one. The caller holds the writer (writerState.mu).
// The wait for a connection is bounded by the busy timeout.
func (s *Store) reconnectWriter() error {
	_ = s.stmts.Close()
	_ = s.wconn.Conn.Close() // database/sql discards a bad connection
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.BusyTimeout)
	defer cancel()
	c, err := s.wdb.Conn(ctx)
	if err != nil {
		return err
	}
	stmts, err := s.ex.PrepareWriter(ctx, c)
	if err != nil {
		_ = c.Close()
		return err
	}
	s.wconn.Conn, s.stmts = c, stmts
	s.log.Warn("the database ended the writer's session; reconnected", "path", s.path)
	return nil
}

// request is one unit of work for the writer: an append (several may share
// a transaction) or an Update closure (the two mix in one group).
type request struct {
	ctx context.Context
	// append
	a *appendReq
	// update
	fn func(*Tx) error

	res   AppendResult
	err   error
	panic any
	done  chan struct{}
	// state: queued, then taken by the writer or withdrawn by its caller
	// whose ctx ended first; whoever moves it first decides.
	state atomic.Int32
}

const (
	reqQueued int32 = iota
	reqTaken
	reqWithdrawn
)

// writerState decides who runs SQL on the write connection: the writer
// goroutine, or a caller running its own request when the store is idle.
type writerState struct {
	// mu is held by whoever uses the write connection.
	mu sync.Mutex
	// pending counts submissions that have not returned yet.
	pending atomic.Int64
	// secureRefs counts the callers that need secure_delete on (held
	// under mu; see Store.secureDelete).
	secureRefs int
}

// admitWrite admits a call that writes: refused on a read-only or closed
// store, else counted in s.inflight (which Close waits for); the caller
// calls s.inflight.Done once it no longer uses the write connection.
func (s *Store) admitWrite() error {
	if s.opts.ReadOnly {
		return s.errReadOnly()
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.inflight.Add(1)
	return nil
}

// submit runs r on the writer and returns its outcome: nil when it was
// stored, an error when nothing of it was. When ctx ends before the writer
// takes r, r is withdrawn and submit returns ctx.Err(). Once the writer
// has taken r, submit waits for its outcome whatever ctx does: the writer
// checks ctx before r's statements and when an Update closure returns,
// and rolls r back when ctx has ended (see runGroup).
//
// When no other submission is pending and the write connection is free,
// r runs right here on the caller's goroutine: handing it to the writer
// goroutine and back costs two goroutine wake-ups, measured here at about
// 20 us per append, a sixth of a synchronous=NORMAL commit. Under
// concurrency requests go to the writer goroutine, which commits them in
// groups. Either way one goroutine at a time uses the connection. A
// request run here is a group of one, as a request alone on the writer
// is (runGroup): on SQLite its statements run under ctx, which may
// interrupt one mid-statement (the transaction then rolls back and
// nothing of r is stored); on PostgreSQL ctx is checked before each
// statement. Only statements of a transaction shared with other requests
// never watch ctx.
func (s *Store) submit(ctx context.Context, r *request) error {
	if err := s.admitWrite(); err != nil {
		return err
	}
	defer s.w.pending.Add(-1)
	if s.w.pending.Add(1) == 1 && len(s.queue) == 0 && s.w.mu.TryLock() {
		s.runInline(r)
		if r.panic != nil {
			panic(r.panic)
		}
		return r.err
	}
	select {
	case s.queue <- r:
		s.inflight.Done()
	case <-ctx.Done():
		s.inflight.Done()
		return ctx.Err()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqWithdrawn) {
			return ctx.Err() // the writer will skip it
		}
		<-r.done // taken: its outcome decides
	}
	if r.panic != nil {
		panic(r.panic)
	}
	return r.err
}

// runInline runs r on the caller's goroutine. The caller holds s.w.mu and
// counts in s.inflight (Close waits for it); runInline releases both.
func (s *Store) runInline(r *request) {
	defer s.inflight.Done()
	defer s.w.mu.Unlock()
	// The caller's goroutine may be unwound (a panic recovered above us,
	// runtime.Goexit): leave no transaction open for the next writer.
	finished := false
	defer func() {
		if !finished {
			_ = s.stmts.Rollback(bg)
		}
	}()
	one := [1]*request{r}
	s.runGroup(one[:])
	finished = true
}

// runWriter is the writer goroutine: it runs the queued work one
// transaction at a time, holding s.w.mu while it uses the write
// connection, until the queue is closed and drained.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	group := make([]*request, 0, s.opts.MaxBatch)
	for {
		r, ok := <-s.queue
		if !ok {
			return
		}
		group = append(group[:0], r)
	gather:
		for len(group) < s.opts.MaxBatch {
			select {
			case r, ok := <-s.queue:
				if !ok {
					break gather
				}
				group = append(group, r)
			default:
				break gather
			}
		}
		s.w.mu.Lock()
		s.runGroup(group)
		s.w.mu.Unlock()
	}
}

// bg is the context for the writer's own statements: a request's context
// must not interrupt a transaction that its neighbours share, and a
// context without Done spares the driver a goroutine per statement.
var bg = context.Background()

// begin starts an immediate transaction, mapping a lock timeout to ErrBusy.
func (s *Store) begin() error {
	if err := s.stmts.Begin(bg); err != nil {
		return fmt.Errorf("begin: %w", mapErr(err))
	}
	return nil
}

func (s *Store) commit() error {
	if err := s.stmts.Commit(bg); err != nil {
		_ = s.stmts.Rollback(bg)
		return fmt.Errorf("commit: %w", mapErr(err))
	}
	return nil
}

func (s *Store) rollback() {
	if err := s.stmts.Rollback(bg); err != nil {
		s.log.Warn("rollback failed", "error", err)
	}
}

// runGroup runs a group of requests - appends and Update closures - in
// one transaction, each in its own savepoint when there are several, so
// that one request's conflict, error, panic or cancelled caller does not
// fail its neighbours and one fsync serves them all. A request alone runs
// without a savepoint and rolls the transaction back when it fails. Where
// the driver says a failed INSERT undoes itself
// (driver.Writer.SingleStatementInsert), an append opens its savepoint
// only before a second write (see appendLocked): one whose only write is
// that INSERT has, when it fails, written nothing. The group reads the
// head once: each append's first position follows the previous one's
// last, read afresh after an Update closure.
//
// A request whose caller withdrew it is skipped; one whose ctx has ended
// when the writer takes it never runs. The statements of a shared
// transaction run under context.Background (writeConn), so a caller's
// ctx never interrupts them; a request alone runs its statements under
// its own ctx, which on SQLite may interrupt it mid-statement (on
// PostgreSQL, whose driver closes a connection on a cancelled statement,
// ctx is checked before each statement only).
func (s *Store) runGroup(group []*request) {
	live := group[:0]
	for _, r := range group {
		if !r.state.CompareAndSwap(reqQueued, reqTaken) {
			continue // withdrawn: its caller has returned
		}
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	if gw, ok := s.stmts.(driver.GroupWriter); ok && decidable(live) && s.runDecided(gw, live) {
		return
	}
	finish := func() {
		for _, r := range live {
			close(r.done)
		}
	}
	err := s.begin()
	if err != nil && s.connLost(err) {
		// The server ended the writer's session (a restart, a network
		// cut, or its idle-in-transaction timeout while this process
		// was stopped): take a new connection and try once more.
		if rerr := s.reconnectWriter(); rerr != nil {
			err = fmt.Errorf("%w (reconnect: %v)", err, rerr)
		} else {
			err = s.begin()
		}
	}
	if err != nil {
		for _, r := range live {
			r.err = err
		}
		finish()
		return
	}
	// The writer's methods see every write of this transaction but an
	// Update closure's (runOne says so).
	s.stmts.Track(true)
	now := s.opts.Now().UnixNano()
	if len(live) == 1 {
		s.wconn.stmtCtx = live[0].ctx
		if s.onServer() {
			// pgx answers a cancelled statement by closing the
			// connection, and the writer's is kept for the store's
			// life: the caller's ctx is checked before each statement
			// only (writeConn.ctx).
			s.wconn.stmtCtx = bg
		}
		err := s.runOne(live[0], now, nil)
		s.wconn.stmtCtx = nil
		if err != nil {
			// An interrupted statement may have rolled the transaction
			// back already: then ROLLBACK has nothing to do.
			if err := s.stmts.Rollback(bg); err != nil && live[0].ctx.Err() == nil {
				s.log.Warn("rollback failed", "error", err)
			}
			finish()
			return
		}
	} else {
		s.wconn.stmtCtx = bg
		defer func() { s.wconn.stmtCtx = nil }()
		ok := 0
		// lazy: an append opens its savepoint only before a write that
		// its failure could leave behind (appendLocked); its statements
		// before that write nothing, and a failed single INSERT undoes
		// itself (driver.Writer.SingleStatementInsert).
		lazy := s.stmts.SingleStatementInsert(1)
		var g reqScope
		for _, r := range live {
			g.open = false
			if r.fn != nil || !lazy {
				if err := g.openSavepoint(s); err != nil {
					r.err = err
					continue
				}
			}
			if r.fn != nil {
				// An Update closure may append or write anything: the
				// head is read afresh after it.
				g.headKnown = false
			}
			err := s.runOne(r, now, &g)
			if err != nil {
				if g.open {
					if err := s.stmts.RollbackTo(bg, driver.RequestScope); err != nil {
						s.log.Error("rollback to savepoint failed", "error", err)
					}
				}
				if mayEndTx(err) {
					if in, perr := s.stmts.InTransaction(bg); perr != nil || !in {
						// The engine rolled the whole transaction back
						// (a full disk, an I/O error): what the group
						// wrote is gone, and a statement now would
						// commit alone.
						s.failGroup(live, err, perr)
						if perr != nil {
							s.rollback()
						}
						finish()
						return
					}
				}
			} else {
				ok++
				if r.fn == nil {
					// The last position handed out, under the write
					// lock held until the commit: the next append's
					// first position follows it. (A retry wrote
					// nothing: runOne returned errRetried.)
					g.head, g.headKnown = r.res.LastPosition(), true
				}
			}
			if g.open {
				if err := s.stmts.Release(bg, driver.RequestScope); err != nil {
					s.log.Error("release savepoint failed", "error", err)
				}
			}
		}
		if ok == 0 {
			s.rollback()
			finish()
			return
		}
	}
	if err := s.commit(); err != nil {
		for _, r := range live {
			if r.err == nil {
				r.res, r.err = AppendResult{}, err
			}
		}
		finish()
		return
	}
	finish()
	s.notify()
}

// reqScope is a request's place in a group's shared transaction: the
// last position the group handed out, and the request's savepoint.
type reqScope struct {
	// head is the last position handed out, when headKnown: set by the
	// group's previous successful append, whose transaction holds the
	// write lock until the commit, so no other writer moved it since.
	head      int64
	headKnown bool
	// open: the request's savepoint (driver.RequestScope) is open.
	open bool
}

// openSavepoint opens the request's savepoint.
func (g *reqScope) openSavepoint(s *Store) error {
	if err := s.stmts.Savepoint(bg, driver.RequestScope); err != nil {
		return fmt.Errorf("savepoint: %w", mapErr(err))
	}
	g.open = true
	return nil
}

// runOne runs one request inside the open transaction and returns (and
// records) its error. An Update closure's panic is recovered and recorded,
// to be re-raised in its caller. g is the request's scope in a group, nil
// for a request alone (see appendLocked).
func (s *Store) runOne(r *request, now int64, g *reqScope) error {
	if r.fn == nil {
		r.res, r.err = s.appendLocked(r.a, now, g)
		if errors.Is(r.err, errRetried) {
			// A retry: the first append's result, and this attempt's
			// writes rolled back by the caller.
			r.err = nil
			return errRetried
		}
		return r.err
	}
	tx := &Tx{s: s, now: now}
	s.stmts.Track(false)
	r.err = func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				r.panic = p
				err = fmt.Errorf("panic in Update: %v", p)
			}
		}()
		return r.fn(tx)
	}()
	tx.done = true
	if r.err == nil {
		// The caller's ctx ended while fn ran: its writes are undone,
		// and the caller learns that nothing of it was stored.
		r.err = r.ctx.Err()
	}
	return r.err
}

// mayEndTx says whether a request's error may have come with the
// engine rolling the whole transaction back: not a refusal the store
// made before writing (a conflict, a duplicate id, a retry, invalid
// input, a deleted stream, a cancelled caller) or a constraint the engine
// undid by itself, which leave the transaction open.
func mayEndTx(err error) bool {
	var (
		ce *ConflictError
		de *DuplicateError
		ie *envelope.InvalidError
	)
	switch {
	case errors.As(err, &ce), errors.As(err, &de), errors.As(err, &ie),
		errors.Is(err, errRetried), errors.Is(err, ErrStreamDeleted), errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded), isConstraint(err):
		return false
	}
	return true
}

// failGroup fails every request of a group whose transaction the engine
// rolled back after a request failed with cause (or whose state could not
// be read: perr): the requests that had succeeded lost their writes, and
// those not run yet never ran. A request that failed keeps its error.
func (s *Store) failGroup(live []*request, cause, perr error) {
	err := fmt.Errorf("%w: another request of its group commit failed and the database rolled the whole transaction back (%v); nothing of the group was stored: retry", ErrBusy, cause)
	if perr != nil {
		err = fmt.Errorf("%w: another request of its group commit failed (%v) and the transaction's state cannot be read (%v); nothing of the group was committed: retry", ErrBusy, cause, perr)
	}
	s.log.Error("group commit: the transaction was rolled back under it", "error", cause)
	for _, r := range live {
		if r.err == nil {
			r.res, r.err = AppendResult{}, err
		}
	}
}
