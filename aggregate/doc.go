// Package aggregate is the API most users touch first: define how an
// aggregate's state folds from its events (Evolve) and how a command
// becomes new events (Decide); a Handler loads, decides and appends with
// optimistic concurrency.
//
// On both engines alike: a Handler works on whatever store.Open opened, a
// SQLite file or a PostgreSQL schema.
//
//	h, _ := aggregate.New(s, aggregate.Definition[Order]{
//		Name: "order", Registry: reg, Evolve: evolve, Decide: decide,
//	}, nil)
//	res, err := h.Handle(ctx, aggregate.Command{Stream: "order-1", OperationID: "req-42", Payload: PlaceOrder{Total: 42}})
//	projection.WaitFor(ctx, s, "order_totals", res.LastPosition()) // 0: nothing appended, nothing to wait for
//
// Evolve and Decide may be written per Go type instead, as projections'
// On[T] are: On registers the evolver of one event type, OnCommand the
// decider of one command type (typed payload in, typed events out):
//
//	var ev aggregate.Evolvers[Order]
//	aggregate.On(&ev, func(o Order, e aggregate.EventOf[OrderPlaced]) Order { o.Total = e.Payload.Total; return o })
//	var dc aggregate.Deciders[Order]
//	aggregate.OnCommand(&dc, func(o Order, c aggregate.CommandOf[PlaceOrder]) ([]OrderPlaced, error) {
//		return []OrderPlaced{{Total: c.Payload.Total}}, nil
//	})
//	h, err := aggregate.New(s, aggregate.Definition[Order]{Name: "order", Registry: reg, Evolvers: &ev, Deciders: &dc}, nil)
//
// Guarantees:
//   - A decision is appended with the loaded version as the expected one;
//     on a conflict the handler reloads and decides again (up to
//     MaxAttempts) and never appends a stale decision.
//   - A command with Expected set (the version the user was shown) is
//     checked against the loaded version before Decide runs; a mismatch
//     returns the *store.ConflictError at once, without retrying, and
//     appends and records nothing.
//   - Decide's errors are returned unchanged and append nothing.
//   - A command with an OperationID runs at most once per tenant: its
//     ledger row commits in the transaction of its events; a retry returns
//     the first result; the same id with another input is refused with
//     store.ErrIdempotencyMismatch.
//   - Produced events carry the command's correlation id, and its id as
//     their causation id.
//   - A snapshot is trusted only at the state schema version it was
//     written with; loading from it equals folding every event.
//   - Old event shapes are upcast as they are read (envelope.Registry);
//     stored events never change.
//   - A typed definition whose registry has an event type with no
//     evolver is refused by New (a *DefinitionError), never found at
//     load; a command with no decider appends nothing.
package aggregate
