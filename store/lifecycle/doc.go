// Package lifecycle ends streams and gives their space back: delete and
// truncate a stream, keep streams by retention policy, and scavenge what
// deletions, truncations and policies allow.
//
//	lc := lifecycle.For(s)
//	_, err := lc.Delete(ctx, "acme", "cart-7", lifecycle.DeleteOptions{Reason: "GDPR request", By: "alice"})
//	err = lc.SetRetention(ctx, lifecycle.RetentionPolicy{Prefix: "audit-", MaxAge: 90 * 24 * time.Hour})
//	res, err := lc.Scavenge(ctx, lifecycle.ScavengeOptions{DryRun: true})
//
// A delete or a truncate appends an event to the stream
// (eventlite.stream.deleted, eventlite.stream.truncated) in the
// transaction that changes it, so projections and the relay see it; the
// events themselves stay in the log until a scavenge removes them. A
// scavenge never removes a stream's newest event, an event a projection's
// checkpoint or a running rebuild has not passed, or one the relay has
// not settled; it reports what held events back. The positions it
// removes are recorded and never handed out again. docs/operations.md
// says how to run it.
package lifecycle
