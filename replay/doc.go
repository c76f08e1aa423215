// Package replay rebuilds a projection's read model from the log, proves
// the rebuild caught up, and swaps it in atomically, while the live read
// model keeps serving. Run it when a projection's code changed or its
// read model is damaged; a dry run reports the drift instead of swapping.
//
// It rebuilds on either engine: the shadow tables live beside the read
// model, in the SQLite file or the PostgreSQL schema.
//
//	res, err := replay.Rebuild(ctx, s, orderTotals, &replay.Options{
//		Progress: func(p replay.Progress) { ... }, // the library never prints
//	})
//	res, err = replay.Rebuild(ctx, s, orderTotals, &replay.Options{DryRun: true})
//	fmt.Println(res.Drift.Missing, res.Drift.Extra, res.Drift.Different)
//
// A rebuild, under the lease projection.RebuildLeaseResource(name) (one
// replay of a projection at a time; projection stats say "rebuilding"
// while it is held):
//
//  1. takes the watermark, the log head at its start;
//  2. creates shadow copies of the projection's declared tables, named
//     <table>__rb<generation> (their indexes, named {table}_..., too);
//  3. applies the matching events from the shadow's checkpoint (0, or
//     where an earlier run stopped) up to the watermark, in batches read
//     outside any write transaction, each batch committed with the
//     shadow's checkpoint in one transaction (with the projection's
//     ApplyBatch when it has one);
//  4. verifies that the shadow's checkpoint is the watermark and that it
//     applied exactly as many events as the log has matching ones up to
//     it, counted apart from the reads that fed it;
//  5. catches up to the live head;
//  6. swaps, in one transaction: the last few events, each live table
//     dropped and its shadow renamed to its name, the projection's
//     checkpoint set to the shadow's. Readers see the old read model or
//     the new one, never a mix.
//
// The live runner keeps its lease and goes on serving throughout: replay
// never takes the projection's lease from it. What fences the two is the
// runner's compare-and-set on its checkpoint: a batch it read before the
// swap finds the checkpoint moved when it commits, is discarded, and the
// runner resumes from the swapped-in checkpoint (logging it at info
// level). Deploy the projection's new code to the runner too: after the
// swap it applies the events that follow.
//
// Guarantees:
//   - The live read model and its checkpoint change only in the swap's
//     transaction. A failure, a cancelled context or a kill at any moment
//     before it leaves them as they were; the next run resumes from the
//     shadow's checkpoint (FromScratch starts a new generation from 0).
//   - Nothing is swapped unless the shadow reached the watermark with the
//     right number of events (*VerifyError otherwise).
//   - A handler error fails the rebuild with a *HandlerError naming the
//     event's position.
//   - Only the read-model handler runs: a rebuild never repeats an
//     external effect.
//   - A dry run compares the shadow with the live read model at the live
//     checkpoint (a lagging read model is behind, not drifted), row by row
//     by primary key, in one transaction that holds the writer while it
//     compares; it swaps nothing and drops the shadow.
//
// Package replaycmd offers the same as a "replay" subcommand that the
// eventlite binary, and a service's own binary, mount.
package replay
