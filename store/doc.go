// Package store is eventlite's event store, on a SQLite file or in a
// PostgreSQL schema with one API: the writer goroutine and its group
// commits, appends with optimistic concurrency, reads, the outbox the
// relay drains, and the ledgers beside them. Its logic is written once;
// the SQL of each engine is its driver's (internal/sqlitedriver,
// internal/pgdriver, behind the interfaces of internal/driver), so this
// package runs no SQL of its own. PostgreSQL is linked by importing
// store/postgres.
//
//	s, err := store.Open(ctx, "eventlite.db", nil) // or a postgres:// address; nil: the defaults
//	if err != nil { ... }
//	defer s.Close()
//	e, _ := envelope.New("order.placed", OrderPlaced{Total: 42})
//	res, err := s.Append(ctx, "default", "order-1", store.NoStream, e)
//	for e, err := range s.ReadStream(ctx, "default", "order-1", store.ReadStreamOptions{}) { ... }
//
// Guarantees:
//   - An Append that returned nil is durable (WAL, synchronous=FULL by
//     default) and visible to every reader once it returns. An Append or
//     Update that returned an error stored nothing, whenever its caller's
//     context was cancelled: a cancelled caller never fails or interrupts
//     the others of its group commit.
//   - Per tenant and stream, versions are 1, 2, 3, ... with no gap and no
//     duplicate. An append whose expected version does not hold writes
//     nothing and returns a *ConflictError naming expected and actual.
//   - Global positions start at 1, strictly increase in commit order and
//     are never reused, across processes sharing the database: the writer
//     hands out the next one above both the highest stored position and
//     the floor that a scavenge (before removing events) and a restore
//     raise.
//   - Every committed event is pending in the outbox until the relay
//     publishes it (or an operator discards it): an append writes no
//     outbox row; the relay settles events above its watermark W in
//     position order per stream, and W never passes an event it has not
//     settled.
//   - Event ids are unique per tenant; re-appending the newest events of a
//     stream is a retry that returns the first result and writes nothing;
//     any other reuse is refused with a *DuplicateError.
//   - Bad input is refused with a typed error before any transaction
//     starts, and never changes the database.
//   - A file that is not an eventlite database is refused
//     (ErrNotEventlite) and left byte for byte as it was. A store opened
//     with Options.ReadOnly never creates, migrates or converts its file,
//     and refuses writes (ErrReadOnly); opened by another OS user, it
//     creates no file the owner could not write (ErrNotOwner otherwise).
//
// One writer goroutine owns the write connection. Concurrent Appends share
// a transaction (group commit, a savepoint per request, one fsync for all);
// Update closures join the same groups, each under its own savepoint. On
// SQLite every write transaction is BEGIN IMMEDIATE, and other processes
// meet through SQLite's lock and busy_timeout; on PostgreSQL every write
// transaction first locks the head row, and other processes and hosts meet
// there. A lock held past the timeout is ErrBusy, which is retryable.
//
// Twins and transactions: the few writes a service makes have a twin for
// use inside its own transaction, s.Append beside tx.Append (River's
// Insert and InsertTx). *Tx holds what an application's handler or
// Update closure does in a transaction (bbolt's tx.Bucket): its SQL,
// tx.Nested, tx.Dialect, tx.TableExists, tx.Append, tx.SaveSnapshot. A Tx is valid only inside its
// Update closure. The store's own bookkeeping in a transaction
// (checkpoints and fences, outbox marks, the consumer inbox, quarantine
// records, rebuild state, table swaps, the operation ledger's writes) is
// not on *Tx: eventlite's packages reach it with Bookkeeping, whose key's
// package (internal/inside) an application cannot import, so a handler
// cannot rewind a checkpoint or mark an outbox row published.
//
// The package, file by file. *Store (store.go) keeps what a service
// calls: Open, Close, Append, the reads, Update, View, Changed, Done,
// Path, Diagnose, CheckInvariants; the rest sits in small handles reached
// from it (Outbox, Effects, Consumers, Leases, Projections, Rebuilds,
// Aggregates, Inventory, Erasure), what an application does inside a
// write transaction is a method of *Tx (tx.go), and the store's
// bookkeeping inside one is reached with Bookkeeping (bookkeeping.go).
// New features add handles, not Store methods.
//
//	store.go        Open, Options, Close, Changed, Done, Path
//	writer.go       the writer goroutine and its group commits
//	conn.go         the read connections
//	tx.go, view.go  Update and *Tx (tx.Nested: a scope that undoes only its
//	                own writes), View and *ReadTx
//	bookkeeping.go  Bookkeeping: the store's bookkeeping in a Tx, for
//	                eventlite's own packages (b.X below is one of its calls)
//	dialect.go      Dialect, tx.Dialect, rt.Dialect; which driver an
//	                address opens (a file: internal/sqlitedriver; a
//	                postgres:// address: the driver store/postgres registers)
//	callersql.go    a caller's failed statement, named with its engine and
//	                the page on handler SQL
//	append.go       Append, tx.Append, Expected
//	trace.go        the append span, the traceparent/tracestate extension, LatencyObserver
//	read.go         ReadStream, ReadAll, Head, StreamVersion, EventByID
//	streaminfo.go   Streams (by prefix, after, limit) and StreamInfo
//	checkpoint.go   Projections.Checkpoint(s), b.Checkpoint, b.SetCheckpoint
//	aggregates.go   s.Aggregates(): what package aggregate keeps beside the
//	                events; snapshots.go: LoadSnapshot, tx.SaveSnapshot;
//	                operations.go, the operation ledger: Operation,
//	                b.Operation, b.RecordOperation
//	lifecycle.go    delete and truncate a stream (store/lifecycle's face); b.StreamEvents
//	retention.go    retention policies by stream-id prefix
//	scavenge.go     the scavenge: retention applied, the plan
//	scavenge_batch.go  the batches: what holds events back, the scrub steps
//	scavenge_space.go  secure_delete, incremental vacuum or VACUUM, WAL checkpoint
//	outbox.go       s.Outbox(): the relay's reads and ledger, watermark, dead letters, parked streams;
//	                b.MarkPublished, b.RecordFailure, b.DeadLetter
//	effects.go      s.Effects(): the effect ledger (Run, Reconcile, Compensate;
//	                its steps reserve, begin, complete... are EffectSteps')
//	effects_approval.go  Effects.Do with kinds, arguments and a person's
//	                approval; Approve, Reject, ResumeApproved
//	consumer.go     s.Consumers(): an external consumer's inbox, versions,
//	                deferred events and version conflicts (b.InboxInsert...)
//	lease.go        s.Leases(): listed; taken and renewed through Inner; b.CheckFence
//	projections.go  s.Projections(): projection status (b.SetProjectionStatus)
//	quarantine.go   quarantined events (b.Quarantine) and, in
//	quarantine_actions.go, an operator's retry and skip
//	holes.go        holes in the position sequence (b.RecordHole)
//	rebuild.go      s.Rebuilds(): rebuild bookkeeping (b.SaveRebuild...)
//	tables.go       read-model tables: tx.TableExists, b.DropTable,
//	                b.RenameTable, b.CompareTables
//	inventory.go    s.Inventory(): what the file holds, counted, as a
//	                dashboard and a metrics scrape read it: Stats (the
//	                store's or a tenant's), Tenants; counts.go: Counts of
//	                the consumer and effect queues
//	erasure.go      s.Erasure(): Forget and Scrub, crypto-shredding a subject;
//	                erasure_append.go (the erasurekey extension on append),
//	                erasure_crypto.go (master and data keys, AES-256-GCM),
//	                erasure_keys.go (the data keys, cached), erasure_guard.go
//	                (EncryptedError: no master key, nothing passed on)
//	reserved.go     the store's own streams (ReservedStreamPrefix)
//	owner.go        OwnerGone: a lease owner's process that no longer runs
//	doctor.go       Diagnose; invariants.go CheckInvariants
//	backup.go, restore.go, inspect.go
//	                a SQLite file: backup, restore, inspect (ErrFileOnly
//	                on PostgreSQL)
//	migrate.go, readonly.go, access.go
//	                the schema version, read-only opens, and who may open
//	                a file (the migrations themselves are the drivers')
//	copy.go         Copy: a SQLite file into a PostgreSQL schema, verified
//	errors.go       the sentinel and typed errors
//
// Backup copies a live file consistently (SQLite's backup API in one read
// transaction; a service backs up its open store with Backup(ctx,
// s.Path(), dest, opts)), verifies the copy and only then renames it into
// place;
// Restore copies a checked backup into a file in place, under its write
// lock, keeping the position sequence above every position the old file
// handed out (backup.go).
package store
