// Package projection reads the log into read models, two ways.
//
// Local projections read this store's log. A Projection declares the
// tables it owns and one handler per Go event type (On, against the
// envelope.Registry the aggregates use): each handler receives the
// event's data decoded and upcast, its metadata (stream, version,
// position, time, ids) and the runner's transaction, and the projection
// reads the event types its handlers' types are registered for. A Runner
// holds the projection's lease (one active runner among several
// processes), catches up from the checkpoint in batches read outside the
// write transaction, and follows new commits:
//
//	h := projection.NewHandlers(reg) // reg: envelope.Register[OrderPlaced](reg, "order.placed")
//	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[OrderPlaced]) error {
//		_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("order_totals")+` AS t (id, total) VALUES (?, ?)
//			ON CONFLICT (id) DO UPDATE SET total = t.total + excluded.total`, e.Stream, e.Data.Total)
//		return err
//	})
//	r, _ := projection.NewRunner(s, projection.Projection{
//		Name:     "order_totals",
//		Handlers: h,
//		Tables:   []projection.Table{{Name: "order_totals", Schema: `CREATE TABLE {table} (id TEXT PRIMARY KEY, total INTEGER)`}},
//	}, nil)
//	go r.Run(ctx)
//	res, _ := orders.Handle(ctx, aggregate.Command{Stream: "order-1", Payload: PlaceOrder{Total: 42}})
//	projection.WaitFor(ctx, s, "order_totals", res.LastPosition()) // read your writes; 0 waits for nothing
//
// A handler's SQL is its own, run through a database/sql transaction:
// tx.Dialect() names the engine (store.DialectSQLite or
// store.DialectPostgres), and a Table may declare DDL per dialect
// (Schemas, beside the default Schema). Written as above it runs
// unchanged on both: ? placeholders (numbered $1..$n on PostgreSQL by the
// store), and an upsert that names the table by an alias (INSERT INTO
// <table> AS t ... DO UPDATE SET total = t.total + ...): an unqualified
// column there is ambiguous on PostgreSQL, and the table's own name is
// not the one written to during a rebuild (tx.Table names a shadow table
// then). docs/handler-sql.md has the rules. Each
// event (or batch) is applied in a tx.Nested scope, so a failed handler's
// writes are undone and the transaction goes on; a handler that needs a
// scope of its own calls tx.Nested too, never SAVEPOINT. The Tx offers
// the SQL calls, Nested, Dialect, TableExists and Table and nothing of the
// runner's bookkeeping: the runner moves the checkpoint, quarantines and
// sets the status itself, in the same transaction.
//
// The untyped form stays for tools that read events as stored (the
// built-in catalog): Types lists the event types and Apply receives each
// envelope.Event. Deliver hands events to a read model outside the store.
//
// External consumers take events that arrive from a broker or over HTTP,
// at least once and in any order (Consumer.Handle).
//
// Guarantees:
//   - A local projection applies each event at most once: its read-model
//     writes and its checkpoint commit in one transaction, fenced by its
//     lease token, so a runner that lost its lease writes nothing.
//   - A handler that keeps failing is tried a bounded number of times; the
//     event is quarantined with its position, error and attempts, and the
//     projection stops there (or skips it, when configured). An event whose
//     data does not decode (errors.Is(err, envelope.ErrInvalidEvent)) is
//     quarantined at its first attempt as ReasonUninterpretable,
//     with the data named as the cause. A restart
//     after the fix resumes exactly at that event. An operator lists,
//     retries or skips quarantined events of projections and consumers
//     alike (Quarantine(s): Open, Retry, Skip;
//     eventlite quarantine): a retried event is applied again on the
//     runner's next pass (Consumer.ApplyRetries for a consumer).
//   - WaitFor never waits in vain without saying so: it returns a
//     *StuckError at once for a projection stopped on a quarantined event
//     (ErrStopped), and for one whose runner's process is gone and whose
//     lease nobody took over within a lease period (ErrOwnerGone); a name
//     it does not know (no Runner built for it in this process, no record
//     in the store) fails at once with ErrUnknownProjection, naming the
//     known ones.
//   - A projection cannot declare a table named like one of eventlite's
//     own (ErrReservedTable), nor one without DDL for the store's dialect
//     (*MissingSchemaError, before any table is created).
//   - A handler that fails (or panics) leaves none of its writes: the
//     event's scope is undone, and only it.
//   - A hole in the global positions is passed and recorded, never waited
//     for: with one SQLite writer it cannot fill later.
//   - An external consumer never applies a duplicate (the inbox insert is
//     the decision), never rolls an aggregate back to an older version,
//     and never applies version N+2 before N+1: it defers the early event
//     durably and applies it when the gap fills, or quarantines it with
//     the evidence after DeferFor. The same version with another event id
//     is a recorded conflict, never an overwrite. An event it cannot
//     interpret is quarantined at once, not retried.
package projection
