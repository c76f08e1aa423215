package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/pgaddr"
	"github.com/eventlite/eventlite/store/internal/sqlitedriver"
)

// Options configures Open. The zero value (or nil) means the defaults
// documented on each field.
type Options struct {
	// Synchronous is SQLite's synchronous setting: "FULL" (default) makes
	// every acknowledged append durable across power loss; "NORMAL" survives
	// a process crash but may lose the newest commits on power loss.
	Synchronous string
	// BusyTimeout is how long a write waits for another process's lock
	// before failing with ErrBusy. Default 5s.
	BusyTimeout time.Duration
	// PollInterval is how often the store looks for commits made by other
	// processes (PRAGMA data_version). Default 100ms. Commits made through
	// this Store wake waiters at once.
	PollInterval time.Duration
	// MaxDataBytes limits an event's data as stored, inclusive. Default
	// envelope.DefaultMaxDataBytes (512 KiB).
	MaxDataBytes int
	// MaxEventBytes limits a whole event as envelope.Event.EventBytes
	// measures it (data plus, per attribute, len("ce-") + len(name) +
	// len(value) + 4), inclusive. Default envelope.DefaultMaxEventBytes
	// (1 MiB - 8 KiB), which fits NATS's default max payload with the
	// transport's headers. MaxDataBytes must not exceed it.
	MaxEventBytes int
	// JournalSizeLimit caps the WAL file kept after a checkpoint, in
	// bytes. Default 64 MiB.
	JournalSizeLimit int64
	// ReadConns is the number of connections that serve reads. Default 4.
	// The change poller holds one more read connection of its own.
	ReadConns int
	// MaxBatch caps how many concurrent appends share one transaction.
	// Default 256.
	MaxBatch int
	// Logger receives structured logs. Default: none.
	Logger hclog.Logger
	// Now is the clock for event times and bookkeeping. Default time.Now.
	Now func() time.Time
	// ReadOnly opens an existing eventlite database for reading only: it
	// never creates, migrates or switches the file to WAL, and every write
	// returns an error matching ErrReadOnly. A missing file is ErrNotFound;
	// a file of an older schema, or without tables, ErrSchemaTooOld (open
	// it once without ReadOnly to upgrade it). Default false.
	//
	// Opened by a user other than the file's owner (and not root), a
	// read-only store creates no file: it reads while a process has the
	// database open (its -wal and -shm files exist), or when the files it
	// would create let the owner write them (a group that owns the file,
	// with write permission); otherwise Open refuses with a *SharingError.
	ReadOnly bool
	// TracerProvider starts the append span of every Append, whose
	// context each appended event stores as its traceparent/tracestate
	// extension (W3C format). Default: otel's global provider, looked up
	// at each append; while none is set, tracing costs nothing.
	TracerProvider trace.TracerProvider
	// Propagator carries trace context through the headers of transports
	// built on this store. Default: otel's global propagator. The stored
	// extension is W3C whatever it is.
	Propagator propagation.TextMapPropagator
	// Latency, when set, observes the latency of every Append and
	// tx.Append (operation "append"), with the append span in its
	// context. Default: none.
	Latency LatencyObserver
	// MasterKey is the master key (32 bytes) that wraps the data keys of
	// erasure (package store/erasure): with it, appends carrying the erasurekey
	// extension are encrypted and reads decrypt them. It is never stored
	// in the database. Default: none (MasterKeyFile, when set).
	MasterKey []byte
	// Schema is the PostgreSQL schema the store's tables live in, when
	// Open's address is a postgres:// URL. Default: the address's
	// eventlite_schema parameter, else "eventlite". Giving both with
	// different values is an error. Ignored for a SQLite file.
	Schema string
	// MasterKeyFile, when MasterKey is not set, is a file holding the
	// master key (see erasure.ReadMasterKeyFile for its format). Default: none,
	// and then an append carrying erasurekey fails with ErrNoMasterKey
	// and reads return encrypted events without data, marked
	// dataencrypted: true.
	MasterKeyFile string
}

func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	switch strings.ToUpper(c.Synchronous) {
	case "":
		c.Synchronous = "FULL"
	case "FULL", "NORMAL":
		c.Synchronous = strings.ToUpper(c.Synchronous)
	default:
		return c, fmt.Errorf("store: Options.Synchronous %q: want FULL or NORMAL", c.Synchronous)
	}
	if c.BusyTimeout < 0 || c.PollInterval < 0 || c.MaxDataBytes < 0 || c.MaxEventBytes < 0 || c.JournalSizeLimit < 0 || c.ReadConns < 0 || c.MaxBatch < 0 {
		return c, errors.New("store: Options fields must not be negative")
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.PollInterval == 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.MaxDataBytes == 0 {
		c.MaxDataBytes = envelope.DefaultMaxDataBytes
	}
	if c.MaxEventBytes == 0 {
		c.MaxEventBytes = envelope.DefaultMaxEventBytes
	}
	if c.MaxDataBytes > c.MaxEventBytes {
		return c, fmt.Errorf("store: Options.MaxDataBytes %d is more than Options.MaxEventBytes %d: the data limit must be at most the event limit", c.MaxDataBytes, c.MaxEventBytes)
	}
	if c.JournalSizeLimit == 0 {
		c.JournalSizeLimit = 64 << 20
	}
	if c.ReadConns == 0 {
		c.ReadConns = 4
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 256
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// Store is an event store on a SQLite file or in a PostgreSQL schema. It is safe for concurrent
// use. Writes go through one write connection, used by one goroutine at a
// time: the writer goroutine, which commits concurrent appends in groups,
// or, when nothing else is pending, the caller itself (see submit). Reads
// use a pool.
type Store struct {
	path  string // the file's absolute path; for a server, its address without the password
	addr  string // what the driver opens: the file, or the server's address with its password
	opts  Options
	log   hclog.Logger
	trace tracing.Config

	plan         accessPlan // how this process may open the file (checkAccess)
	schemaAtOpen int        // the file's schema version before Open migrated it

	drv   driver.Driver   // the engine's lifecycle (the storage seam)
	ex    driver.Executor // the engine's operations: drv.Executor()
	wdb   *sql.DB         // the write pool: one connection, owned by the writer
	wconn *writeConn      // the writer's connection
	rdb   *readPool       // the read pool
	stmts driver.Writer   // the append path, prepared on the writer's connection
	reads driver.Reader   // the common reads, prepared on the read pool

	queue      chan *request
	writerDone chan struct{}
	w          writerState // who may use the write connection now

	mu       sync.RWMutex // guards closed against submissions
	closed   bool
	inflight sync.WaitGroup // submissions between the closed check and the queue
	doneCh   chan struct{}  // closed when Close begins
	closeEnd chan struct{}  // closed when Close has finished

	notifyMu     sync.Mutex
	notifyCh     chan struct{}
	notifyClosed bool // Close closed notifyCh for good

	pollStop chan struct{}
	pollDone chan struct{}

	keys *keyring // data keys of erasure, and the master key

	stats statsCache // Inventory.Stats' counts per tenant
}

// Open opens (creating if needed) the event store at path and brings its
// schema up to date. path is a SQLite file, or a PostgreSQL address
// (postgres://... or postgresql://..., with eventlite_schema=NAME to pick
// the schema, default "eventlite", created when missing: see
// Options.Schema); the same API and guarantees hold on both, and a
// handler's SQL written with ? placeholders and aliased upserts runs on
// both (tx.Dialect() names the engine). A database written by a newer
// schema is refused with ErrSchemaTooNew, a file that is not an eventlite
// database (it has other tables, or is not SQLite) with ErrNotEventlite,
// and both are left as they were; a zero-byte file or one without tables
// becomes an eventlite database. With Options.ReadOnly it only reads an
// existing, up-to-date eventlite database. Several processes may open one
// database at once.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New("store: empty database path")
	}
	master := o.MasterKey
	if master == nil && o.MasterKeyFile != "" {
		if master, err = readMasterKeyFile(o.MasterKeyFile); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	keys, err := newKeyring(master)
	if err != nil {
		return nil, fmt.Errorf("store: Options.MasterKey: %w", err)
	}
	o.MasterKey, o.MasterKeyFile = nil, "" // kept in the keyring only
	drv, abs, err := chooseDriver(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &Store{
		path:       abs,
		addr:       path,
		opts:       o,
		log:        o.Logger.Named("store"),
		trace:      tracing.Config{TP: o.TracerProvider, Prop: o.Propagator},
		queue:      make(chan *request, 1024),
		writerDone: make(chan struct{}),
		notifyCh:   make(chan struct{}),
		pollStop:   make(chan struct{}),
		pollDone:   make(chan struct{}),
		doneCh:     make(chan struct{}),
		closeEnd:   make(chan struct{}),
		keys:       keys,
		drv:        drv,
		ex:         drv.Executor(),
	}
	if drv.Dialect() == driver.SQLite {
		s.addr = abs
	}
	keys.ex = s.ex
	if err := s.open(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	go s.runWriter()
	s.startPoll()
	return s, nil
}

// Path returns the absolute path of the database file; for a store on
// PostgreSQL, its address with any password replaced by "xxxxx".
func (s *Store) Path() string { return s.path }

// defaultDriver is the engine of a database file.
var defaultDriver driver.Driver = sqlitedriver.Driver{}

// PostgresSchemaVersion is the schema version this binary writes to a
// PostgreSQL schema: its migrations are numbered on their own, from the
// SQLite store's newest schema. It is 0 in a program that does not
// import store/postgres.
func PostgresSchemaVersion() int {
	srv := driver.Server()
	if srv == nil {
		return 0
	}
	ms, _ := srv.Migrations()
	return len(ms)
}

// chooseDriver picks the engine by the address: a postgres:// or
// postgresql:// URL is PostgreSQL's, anything else a SQLite file. It
// returns the name the store gives the database in messages: the file's
// absolute path, or the address without its password. A PostgreSQL
// address in a program that did not import store/postgres is
// ErrNoPostgresDriver.
func chooseDriver(addr string) (driver.Driver, string, error) {
	if pgaddr.IsAddress(addr) {
		red := pgaddr.Redact(addr)
		srv := driver.Server()
		if srv == nil {
			return nil, red, noPostgresDriver(red)
		}
		return srv, red, nil
	}
	abs, err := filepath.Abs(addr)
	return defaultDriver, abs, err
}

// IsPostgresAddress reports whether Open takes addr for a PostgreSQL
// server's address (postgres:// or postgresql://, in any case) rather
// than a database file's path.
func IsPostgresAddress(addr string) bool { return pgaddr.IsAddress(addr) }

// classify returns err's driver.Class as the engine it came from tells
// it: SQLite's driver, always linked, then the PostgreSQL driver when the
// program imported it. The engines' error types are disjoint.
func classify(err error) driver.Class {
	if err == nil {
		return driver.Other
	}
	if k := defaultDriver.Classify(err); k != driver.Other {
		return k
	}
	if srv := driver.Server(); srv != nil {
		return srv.Classify(err)
	}
	return driver.Other
}

// onServer reports whether the store runs on a database server rather
// than on a file: there is no file to check, copy or vacuum.
func (s *Store) onServer() bool { return s.drv.Dialect() != driver.SQLite }

// openConfig is how the driver opens the file for this store.
func (s *Store) openConfig() driver.OpenConfig {
	return driver.OpenConfig{
		Path:             s.addr,
		Schema:           s.opts.Schema,
		ReadOnly:         s.opts.ReadOnly,
		Attach:           s.plan == planAttach,
		BusyTimeout:      s.opts.BusyTimeout,
		Synchronous:      s.opts.Synchronous,
		JournalSizeLimit: s.opts.JournalSizeLimit,
	}
}

// pragmas reports the SQLite settings that the store's connections run
// with, as SQLite prints them (synchronous FULL is "2", NORMAL "1"): the
// writer's, read inside a write transaction, and each read connection's,
// all held at once so that every one of them is asked. Keys are
// "<connection>.<pragma>", the connection being "writer" or "read1" to
// "readN" (N is Options.ReadConns), the pragmas journal_mode,
// synchronous, foreign_keys, busy_timeout, mmap_size and
// journal_size_limit. It is for tests and diagnostics: while it runs it
// holds the writer and every read connection.
func (s *Store) pragmas(ctx context.Context) (map[string]string, error) {
	names := s.drv.SettingNames()
	out := make(map[string]string, (s.opts.ReadConns+1)*len(names))
	read := func(conn string, q driver.ReadQuerier) error {
		for _, p := range names {
			v, err := s.drv.Setting(ctx, q, p)
			if err != nil {
				return fmt.Errorf("store: %s connection: PRAGMA %s: %w", conn, p, mapErr(err))
			}
			out[conn+"."+p] = v
		}
		return nil
	}
	err := s.Update(ctx, func(tx *Tx) error {
		return read("writer", tx)
	})
	if err != nil {
		return nil, err
	}
	conns := make([]*sql.Conn, 0, s.opts.ReadConns)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := range s.opts.ReadConns {
		c, err := s.rdb.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("store: read connection %d: %w", i+1, mapErr(err))
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		if err := read(fmt.Sprintf("read%d", i+1), c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) open(ctx context.Context) error {
	var err error
	if s.opts.ReadOnly && !s.onServer() {
		if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: no database at %s (a read-only open does not create one): %w", s.path, ErrNotFound)
		}
	}
	if !s.onServer() {
		if s.plan, err = checkAccess(s.path, s.opts.ReadOnly); err != nil {
			return err
		}
	}
	if s.wdb, err = s.drv.OpenWriter(s.openConfig()); err != nil {
		return fmt.Errorf("store: open %s: %w", s.path, err)
	}
	wc, err := s.wdb.Conn(ctx)
	if err != nil {
		if ne := s.notADB(err); ne != err {
			return ne
		}
		return fmt.Errorf("store: open %s: %w", s.path, mapErr(err))
	}
	s.wconn = &writeConn{Conn: wc}
	// Refuse a file from a newer eventlite, or one that is not eventlite's,
	// before changing anything in it (the WAL switch writes to it).
	// migrate reads the version again under the write lock.
	if s.schemaAtOpen, err = s.checkSchema(ctx, s.schemaKnown()); err != nil {
		return err
	}
	if !s.opts.ReadOnly {
		if s.schemaAtOpen == 0 {
			// A new file: let a scavenge give freed pages back to the
			// file system (incremental_vacuum). SQLite takes this only
			// before the first table is created; on a file with tables
			// it does nothing (a full VACUUM converts one: scavenge
			// --vacuum).
			if err := s.drv.InitNew(ctx, s.wconn); err != nil {
				return fmt.Errorf("store: set auto_vacuum on %s: %w", s.path, mapErr(err))
			}
		}
		if err := s.enableWAL(ctx); err != nil {
			return err
		}
		if err := s.migrate(ctx); err != nil {
			return err
		}
	}
	if err := s.prepare(ctx); err != nil {
		return err
	}
	// The change poller holds one connection of this pool for good (the
	// commit counter is per connection): reads get the other ReadConns.
	// Without the extra one, ReadConns 1 blocked every read.
	rdb, err := s.drv.OpenReader(s.openConfig(), s.opts.ReadConns+1)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", s.path, err)
	}
	s.rdb = &readPool{DB: rdb}
	if err := s.rdb.PingContext(ctx); err != nil {
		return fmt.Errorf("store: open %s: %w", s.path, mapErr(err))
	}
	if err := s.prepareReads(ctx); err != nil {
		return err
	}
	if err := s.keys.checkStoreKey(ctx, s.rdb); err != nil {
		return err
	}
	if s.plan == planAttach && (createdByMe(s.path+"-wal") || createdByMe(s.path+"-shm")) {
		// The owner's process closed the file between checkAccess and
		// here, and SQLite created -wal and -shm for this user: remove
		// them before the owner needs them.
		_ = s.closeDBs()
		s.wconn, s.wdb, s.rdb = nil, nil, nil
		_ = os.Remove(s.path + "-wal")
		_ = os.Remove(s.path + "-shm")
		owner, _ := statFile(s.path)
		return &SharingError{Path: s.path, Owner: owner.uid, User: processIDs().uid}
	}
	return nil
}

// enableWAL switches the file to WAL. Several processes opening a new file
// at once may get "database is locked" here even with a busy timeout
// (SQLite does not run the busy handler for this), so retry until the busy
// timeout has passed.
func (s *Store) enableWAL(ctx context.Context) error {
	deadline := time.Now().Add(s.opts.BusyTimeout)
	wait := time.Millisecond
	for {
		err := s.drv.EnableWAL(ctx, s.wconn)
		if err == nil {
			return nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return fmt.Errorf("store: switch %s to WAL: %w", s.path, mapErr(err))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}

// Close stops accepting work, lets the writer finish everything already
// queued, and closes the database. Afterwards every method that takes a
// ctx fails with an error matching ErrClosed, and Changed and Done return
// closed channels. Closing again returns nil, once the first Close has
// finished.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.closeEnd
		return nil
	}
	s.closed = true
	close(s.doneCh)
	s.mu.Unlock()
	defer close(s.closeEnd)
	s.inflight.Wait()
	close(s.queue)
	<-s.writerDone
	close(s.pollStop)
	<-s.pollDone
	s.rdb.closed.Store(true)
	// Wake whoever waits for a commit: there will be none, and what they
	// do next fails with ErrClosed.
	s.notifyMu.Lock()
	close(s.notifyCh)
	s.notifyClosed = true
	s.notifyMu.Unlock()
	return s.closeDBs()
}

// Done returns a channel that is closed when Close begins: a loop that
// serves the store (a relay, a runner, a consumer) stops on it.
func (s *Store) Done() <-chan struct{} { return s.doneCh }

func (s *Store) closeDBs() error {
	var errs []error
	if s.stmts != nil {
		errs = append(errs, s.stmts.Close())
	}
	if s.reads != nil {
		errs = append(errs, s.reads.Close())
	}
	if s.wconn != nil {
		errs = append(errs, s.wconn.Conn.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.DB.Close())
	}
	return closeErr(s.onServer(), errs)
}

// closeErr joins the errors of closing the store's statements and
// connections, leaving out, on a server, those that only say a session
// had already ended (the server restarted, or an operator or a timeout
// ended it): what Close would release is gone already, so that is not a
// failure of Close. Any other error is.
func closeErr(server bool, errs []error) error {
	kept := errs[:0]
	for _, err := range errs {
		if err == nil {
			continue
		}
		if server && sessionEnded(err) {
			continue
		}
		kept = append(kept, err)
	}
	return errors.Join(kept...)
}

// Changed returns a channel that is closed at the next commit seen by this
// store: its own commits at once, other processes' within PollInterval.
// Take the channel before reading, then wait on it, so no commit is missed.
// Once the store is closed it returns a closed channel.
func (s *Store) Changed() <-chan struct{} {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	return s.notifyCh
}

func (s *Store) notify() {
	s.notifyMu.Lock()
	if s.notifyClosed {
		s.notifyMu.Unlock()
		return
	}
	close(s.notifyCh)
	s.notifyCh = make(chan struct{})
	s.notifyMu.Unlock()
}

// startPoll reads the driver's commit counter once before Open returns,
// so that a commit made by another process after Open returned is always
// seen as a change, then polls it in the background (poll).
func (s *Store) startPoll() {
	ctx := context.Background()
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		s.log.Error("change poller cannot get a connection; commits by other processes will not wake waiters", "error", err)
		close(s.pollDone)
		return
	}
	last, err := s.drv.CommitCounter(ctx, conn)
	if err != nil {
		s.log.Debug("poll data_version", "error", err)
		last = -1
	}
	s.keys.noticeForgets(ctx, conn)
	go s.poll(conn, last)
}

// poll watches the driver's commit counter on a read connection of its
// own, which changes when any other connection (another process
// included) commits. last is the value read before Open returned (-1 if
// unknown).
func (s *Store) poll(conn *sql.Conn, last int64) {
	defer close(s.pollDone)
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.pollStop
		cancel()
	}()
	n, _ := s.drv.(driver.Notifier)
	listening := false
	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	for {
		if n != nil && conn != nil && !listening {
			if err := n.Listen(ctx, conn); err != nil {
				s.log.Debug("change poller: no wake-ups; polling", "error", err)
				n = nil
			}
			listening = n != nil
		}
		if listening {
			wctx, wcancel := context.WithTimeout(ctx, s.opts.PollInterval)
			_, err := n.WaitWake(wctx, conn)
			wcancel()
			if err != nil && ctx.Err() == nil {
				s.log.Debug("change poller: wait for a wake-up", "error", err)
				listening = false
			}
		}
		if !listening {
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		if conn == nil {
			// A server ended the poller's session: take another
			// connection, and wake waiters, who may have missed a
			// commit meanwhile.
			c, err := s.rdb.Conn(ctx)
			if err != nil {
				s.log.Debug("change poller: no connection yet", "error", err)
				continue
			}
			conn, last = c, -1
			s.notify()
		}
		v, err := s.drv.CommitCounter(ctx, conn)
		if err != nil && s.connLost(err) {
			s.log.Warn("the database ended the change poller's session; reconnecting", "error", err)
			_ = conn.Close()
			conn, listening = nil, false
			continue
		}
		if err != nil {
			s.log.Debug("poll data_version", "error", err)
			continue
		}
		if last >= 0 && v != last {
			s.keys.noticeForgets(ctx, conn)
			s.notify()
		}
		last = v
	}
}

// isBusy reports whether err is the engine's lock held past the wait
// (driver.Busy).
func isBusy(err error) bool { return classify(err) == driver.Busy }

// isConstraint reports whether err is a constraint violation.
func isConstraint(err error) bool { return classify(err) == driver.Constraint }

// mapErr turns a lock held past the wait into ErrBusy, keeping the
// engine's text. So does a session a server ended (a restart, a network
// cut, its idle-in-transaction timeout): the store takes a new
// connection at its next write, so a retry may succeed, and a retried
// append with the same event ids returns the stored one should the first
// try have committed after all.
func mapErr(err error) error {
	if err == nil || errors.Is(err, ErrBusy) {
		return err
	}
	switch {
	case isBusy(err):
		return fmt.Errorf("%w: %v (another process held the write lock past the busy timeout; retry)", ErrBusy, err)
	case classify(err) == driver.ConnectionLost:
		return fmt.Errorf("%w: %w (the database ended the session; the next call reconnects: retry)", ErrBusy, err)
	}
	return err
}
