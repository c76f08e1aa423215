package driver

import (
	"context"
	"database/sql"

	"github.com/eventlite/eventlite/envelope"
)

// Appends is how the store reaches the engine's write path: a Writer
// prepared once on the writer's connection.
type Appends interface {
	// PrepareWriter prepares the append path's statements on conn, the
	// writer's one connection, and returns them as a Writer. The store
	// closes the Writer before it closes conn.
	PrepareWriter(ctx context.Context, conn *sql.Conn) (Writer, error)
}

// Writer holds the append path's statements, prepared on the writer's
// connection: the store's writer runs thousands of them a second, and an
// unprepared statement costs several times a prepared one. One goroutine
// at a time uses it (the one that holds the writer), so a Writer needs no
// lock.
//
// The store runs every method under a context that never ends
// (context.Background): a group of requests shares the transaction, and
// an interrupted statement would roll back the neighbours' work too.
type Writer interface {
	// Begin starts the write transaction. It takes the engine's write
	// lock now, not at the first write, so that a transaction that reads
	// then writes never fails half-way for another writer (SQLite: BEGIN
	// IMMEDIATE; PostgreSQL: the log_head row lock). Busy when another
	// writer held the lock past the wait.
	Begin(ctx context.Context) error
	// Commit commits the write transaction; on failure the transaction
	// may still be open and the store rolls it back.
	Commit(ctx context.Context) error
	// Rollback undoes the write transaction. An error when none is open
	// (an interrupted statement may have ended it already).
	Rollback(ctx context.Context) error
	// Savepoint opens the scope sp inside the write transaction,
	// RollbackTo undoes what was written in it since (the scope stays
	// open) and Release ends it, keeping its writes. The store opens
	// RequestScope around each request of a group (around an append's
	// writes only, when SingleStatementInsert allows), AppendScope around
	// an append inside an Update closure; they never nest in themselves.
	Savepoint(ctx context.Context, sp Scope) error
	RollbackTo(ctx context.Context, sp Scope) error
	Release(ctx context.Context, sp Scope) error

	// StreamState reads, inside the write transaction, what an append
	// decides on: the stream's lifecycle row, its version, and the last
	// position handed out in the log (the floor a scavenge or restore
	// left included). The store checks the expected version against it,
	// then writes the events at the positions that follow
	// (InsertEvents): from StreamState to the commit, no other writer may
	// change the stream or hand out a position, so the check holds and
	// positions stay consecutive and in commit order. The driver makes
	// that one atomic step: SQLite by the write lock Begin took;
	// PostgreSQL by the log_head row lock Begin took (and the head it
	// read), under which streams rows are read and moved.
	//
	// With head false the last position is not read (LastPosition is 0):
	// the store knows it, having handed it out itself earlier in the same
	// transaction (see SingleStatementInsert).
	StreamState(ctx context.Context, tenant, stream string, head bool) (StreamState, error)
	// InTransaction reports whether the write transaction Begin opened
	// is still open. The store asks after a request of a group failed:
	// SQLite rolls the whole transaction back on some errors (a full
	// disk, an I/O error, an interrupt), and the statements that followed
	// would then each commit on their own. PostgreSQL keeps the
	// transaction (aborted until ROLLBACK TO) or loses the session, which
	// fails the commit.
	InTransaction(ctx context.Context) (bool, error)
	// Track(true), right after Begin, says that the transaction writes
	// through the Writer's methods only; Track(false), before an Update
	// closure runs, that it writes what the Writer does not see. A
	// driver may then answer StreamState from what earlier tracked
	// transactions read and wrote, when it can prove nothing else wrote
	// since (SQLite: its data version). PostgreSQL ignores it.
	Track(on bool)
	// CallerSQL is called before a caller's statement (the SQL an Update
	// closure runs through its Tx) runs on the writer's connection, and
	// CallerSQLDone after it: between them the engine refuses
	// transaction control. Each returns the statement refused, "" when
	// none; the store then reports it and the statement did not run.
	// The store begins, commits and rolls back the transaction a group
	// of requests shares, and opens their savepoints: a caller's COMMIT
	// would commit its neighbours' writes half-done, a ROLLBACK would
	// drop writes the store then acknowledges, and either would leave
	// the group's next statements to commit on their own. SQLite refuses
	// BEGIN, COMMIT, END, ROLLBACK, SAVEPOINT, RELEASE and ROLLBACK TO
	// while compiling the statement (its authorizer: CallerSQLDone
	// answers). PostgreSQL reads the query before it is sent, as the
	// server splits it into statements (CallerSQL answers).
	CallerSQL(query string) (refused string)
	CallerSQLDone() (refused string)
	// SingleStatementInsert reports whether the engine undoes a failed
	// statement's own writes and leaves the transaction usable for the
	// next one, and InsertEvents of n events runs as a single statement.
	// Then an append whose only write is InsertEvents has, when it fails,
	// written nothing, and needs no savepoint of its own: the store opens
	// one only before a second write (the streams row of a stream it
	// creates or revives). SQLite: n <= its InsertChunk (a failed
	// statement is backed out: ON CONFLICT ABORT). PostgreSQL: never (a
	// failed statement aborts the whole transaction).
	SingleStatementInsert(n int) bool
	// InsertEvents writes a batch's events at positions
	// b.FirstPosition, +1..., each with the StreamVersion the store set,
	// and their tags' rows in event_tags (a second statement: the store
	// opens a savepoint for a batch with tags).
	// A failure may leave part of the batch written: the store rolls
	// back. A refused write is returned wrapped in an *OpError naming the
	// events refused; an event id already stored in the tenant is
	// Constraint. An extension that cannot be encoded is an
	// *envelope.InvalidError.
	InsertEvents(ctx context.Context, b EventBatch) error
	// FirstMatch reads, inside the write transaction, the tenant's first
	// readable event after position after that matches q (FirstMatchSQL):
	// an append's condition. It sees what the transaction wrote so far
	// (the requests before this one in a group). ok is false when none
	// matches.
	FirstMatch(ctx context.Context, tenant string, q *Query, after int64) (m Match, ok bool, err error)
	// CreateStream writes the lifecycle row of a stream that had none.
	CreateStream(ctx context.Context, tenant, stream string, now int64) error
	// ReviveStream marks a soft-deleted stream live again.
	ReviveStream(ctx context.Context, tenant, stream string) error
	// EventByID reads, inside the write transaction, what a retried
	// append is compared with: the tenant's stored event with this id.
	// ok is false when there is none.
	EventByID(ctx context.Context, tenant, id string) (ev StoredID, ok bool, err error)
	// SealedUnder reads, inside the write transaction, whether (tenant,
	// subject) has a data key that is not forgotten and, when it has,
	// records that stream holds events sealed under it (erasure_streams:
	// forget finds the subject's snapshots through that record after the
	// events are gone). The store asks it for every subject an append
	// encrypts under, whatever its key cache holds: a forget another
	// process committed before this transaction took the write lock is
	// seen here. It always runs its statements; no cache of the driver
	// (SQLite's stream-state cache) answers it. live is true only when
	// the stored key is wrapped, the bytes given: the key the append
	// sealed with (a key cached before a restore replaced the file is
	// another, or none). forgotten tells a forgotten subject from a key
	// that is missing or another.
	SealedUnder(ctx context.Context, tenant, stream, subject string, wrapped []byte) (live, forgotten bool, err error)
	// Close releases the statements.
	Close() error
}

// Scope names one of the writer's own savepoints.
type Scope uint8

const (
	// RequestScope holds one request of a group commit.
	RequestScope Scope = iota
	// AppendScope holds an append made inside an Update closure.
	AppendScope
)

// StreamState is what an append reads before it writes.
type StreamState struct {
	// Row: the stream has a lifecycle row; Deleted is its state then
	// (0 live, 1 soft-deleted, 2 hard-deleted).
	Row     bool
	Deleted int64
	// Version is the stream's newest event's version, 0 for none.
	Version int64
	// LastPosition is the last position handed out, 0 for none.
	LastPosition int64
}

// EventBatch is the events of one append, ready to store.
type EventBatch struct {
	Tenant, Stream string
	// Events are stored in order, with their StreamVersion; their
	// Position is ignored (FirstPosition and on).
	Events []envelope.Event
	// Sealed, when not nil, holds for each event that has one the
	// encrypted data stored in place of Data.
	Sealed        [][]byte
	FirstPosition int64
	// RecordedAt is the commit's time, unix nanoseconds.
	RecordedAt int64
}

// StoredID is a stored event as a retried append compares it.
type StoredID struct {
	Stream     string
	Version    int64
	Type       string
	Data       []byte
	Extensions []byte // the stored extensions' encoding; nil for none
}

// OpError is a failure of one step of an operation that runs several
// statements: Op says which (its text is part of the error callers see),
// Err is the engine's error.
type OpError struct {
	Op  string
	Err error
}

func (e *OpError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

// GroupWriter is a Writer that decides an append in the engine: one
// statement reads the stream's state under the write lock, checks the
// expected version, the stream's lifecycle, the version and position
// ranges, the batch's event ids and the append condition, and writes the
// events, their tag rows, the streams row and the head only when every
// check holds; a refused append writes
// nothing and fails no statement. So a group's appends need no answer
// from the store in between, and go to the server together. PostgreSQL
// implements it (a round trip costs more there than the statements);
// SQLite does not (it has no round trips).
type GroupWriter interface {
	// AppendGroup begins the write transaction (as Begin) and runs each
	// batch's append in order, in one round trip, filling out[i] with
	// batch i's decision. Positions follow the head as each append moves
	// it, so a refused append leaves no gap.
	//
	// With commit, the COMMIT goes in the same round trip, and a refused
	// append fails its statement instead, so that nothing of the group
	// commits unless every append held: for a group the store expects to
	// hold, which then costs one round trip.
	//
	// On error nothing is open: the driver rolled the transaction back
	// (or the COMMIT failed). failed is -1 when beginning failed (the
	// write lock waited past the busy timeout: Busy; or the session is
	// lost), len(bs) when the COMMIT failed, else the index of the batch
	// whose statement failed (with commit: refused, or a failure;
	// without: an unexpected failure, and the store runs the group again
	// the slow way, each request in its savepoint).
	AppendGroup(ctx context.Context, bs []DecidedBatch, out []Decision, commit bool) (failed int, err error)
}

// DecidedBatch is an append the engine decides (GroupWriter): the
// events (their Position and StreamVersion are ignored: the engine
// assigns them) and the versions the stream may have for the append to
// hold, Lo to Hi. A stream without a streams row, or soft-deleted, has
// version 0 there; one hard-deleted is refused whatever the versions.
//
// Cond, when set, is the append's condition: it holds when no readable
// event of the tenant after position CondAfter matches Cond, the group's
// earlier appends included. An append whose condition fails is refused.
// The events' tags are indexed in the same statement.
type DecidedBatch struct {
	EventBatch
	Lo, Hi    int64
	Cond      *Query
	CondAfter int64
}

// Decision is what the engine decided for a DecidedBatch: the state it
// read (the stream's before the append, and the last position handed out
// before it), and whether it wrote the batch. When it did, the events
// are versions State.Version+1.. at positions State.LastPosition+1...
// When it did not, the store finds out why from State (a check that did
// not hold) or, every check holding, from the stored ids (a retry, or an
// id taken).
//
// CondFailed says that the batch's condition (DecidedBatch.Cond) did not
// hold when the engine decided.
type Decision struct {
	State      StreamState
	Inserted   bool
	CondFailed bool
}
