// Package decision makes decisions whose consistency boundary is a query
// rather than a stream: a rule that spans entities (a user name unique
// across all users; a course that takes at most 30 students while a
// student takes at most 5 courses) reads the events that matter to it,
// wherever they are, and appends on the condition that none of them
// changed meanwhile. It is the Dynamic Consistency Boundary pattern on
// eventlite's tags, queries and append conditions (see the store's
// Query and Condition, and docs/consistency.md).
//
// A Handler is package aggregate's Handler with the stream replaced by a
// query:
//
//	var ev decision.Evolvers[bool]
//	decision.On(&ev, func(taken bool, _ decision.EventOf[UserRegistered]) bool { return true })
//	h, _ := decision.New(s, decision.Definition[bool, RegisterUser]{
//		Name: "register_user", Registry: reg, Evolvers: &ev,
//		Query: func(c RegisterUser) store.Query { return store.Query{Items: []store.QueryItem{{Tags: []string{"username:" + c.Name}}}} },
//		Decide: func(taken bool, c decision.Command[RegisterUser]) ([]decision.Event, error) {
//			if taken {
//				return nil, ErrNameTaken
//			}
//			return []decision.Event{{Stream: "user-" + c.Payload.UserID, Tags: []string{"username:" + c.Payload.Name}, Payload: UserRegistered(c.Payload)}}, nil
//		},
//	}, nil)
//	res, err := h.Handle(ctx, decision.Command[RegisterUser]{OperationID: "req-42", Payload: RegisterUser{UserID: "u1", Name: "alice"}})
//
// Guarantees:
//   - A decision is appended with the condition that no event matching
//     its query (in its tenant) has a position after the one it read at:
//     the log's head, read before the events, or the newest matching
//     event's when that is higher. The store checks the condition inside
//     the append's transaction, under the writer's lock, so two
//     decisions over overlapping boundaries never both append on the
//     same state: across goroutines, processes, and on PostgreSQL.
//   - When the condition fails the handler reads, folds and decides
//     again, up to MaxAttempts; it never appends a stale decision. After
//     the last attempt the error matches store.ErrConditionFailed.
//   - Decide's errors are returned unchanged and append nothing.
//   - The events of one decision commit together, in the order Decide
//     returned them, each to the stream it names, or not at all.
//   - A command with an OperationID runs at most once per tenant, as an
//     aggregate command does (they share the operation ledger): its
//     ledger row commits in the transaction of its events; a retry
//     returns the first result; the same id with another input is
//     refused with store.ErrIdempotencyMismatch.
//   - Appended events carry the command's correlation id, and its id as
//     their causation id.
//   - Old event shapes are upcast as they are read (envelope.Registry);
//     an event the query matches with no evolver fails the decision
//     (a *DefinitionError) rather than being skipped; erased events
//     (their subject was forgotten) carry neither data nor tags and are
//     skipped.
package decision
