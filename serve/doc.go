// Package serve is eventlite's HTTP API: an http.Handler over one store
// that speaks the CloudEvents HTTP protocol binding, so that curl, every
// CloudEvents SDK and services in any language append and read events and
// watch them live. "eventlite serve" mounts it; a service may mount it too.
//
// It serves a store on either engine: a SQLite file, or a PostgreSQL schema
// that several servers may share.
//
//	h, err := serve.New(s, &serve.Options{Tokens: []serve.Token{{Secret: "s3cret", Tenant: "default"}},
//		AllowedHosts: []string{"events.internal"}}) // the names clients use, besides localhost and IPs
//	if err != nil { ... }
//	err = h.Serve(ctx, ln) // until ctx ends; or mount h on a server of your own
//
// docs/http.md describes every endpoint, header, status and problem; the
// handler serves the same as OpenAPI 3.1 at /openapi.json.
//
// Guarantees:
//   - It is a thin layer over the store: an append is one store append (or
//     one Update for several streams or an Idempotency-Key), so every
//     guarantee of the store holds over HTTP; bad input is refused with an
//     RFC 9457 problem before anything is stored.
//   - A retry is safe: re-sending the stream's newest events answers the
//     first result with Idempotent-Replayed: true; an Idempotency-Key's 2xx
//     answer is recorded in the append's own transaction (operation
//     "http:<key>" in the store's ledger) and returned again on retry.
//   - A live reader gets every event after its cursor once, in order, with
//     no gap across reconnects (Last-Event-ID). One goroutine follows the
//     log for all readers; a reader whose bounded queue fills, or that does
//     not take its data within Options.WriteTimeout, is dropped.
//   - Tokens are compared in constant time and never logged.
//   - A request whose Host is not localhost, an IP literal or one of
//     Options.AllowedHosts reaches no handler (DNS rebinding); a body that
//     arrives slower than Options.MinBodyRate is cut with 408; the bodies
//     held at once stay within Options.MaxBufferedBodyBytes (503 beyond);
//     a client that stops reading a response is dropped after
//     Options.WriteTimeout; failed authentications are rate-limited per
//     client address, never a valid token; one token's sessions never end
//     another's. Handler.Serve closes what is left after
//     Options.ShutdownGrace and returns nil.
//   - An effect waiting for a person is approved or rejected with the
//     effect ledger's Approve and Reject (one transaction each; the
//     approval names the hash of the exact arguments listed), and each
//     effect is sent byte for byte as 'eventlite effects list --json'
//     prints it.
package serve
