// Package publish is eventlite's outbox relay and its publishers: it takes
// every committed event from the store's outbox and publishes it to NATS
// JetStream (package natsjs), a CloudEvents HTTP sink or standard output.
// It imports no NATS code.
//
// The relay works the same on a SQLite file and a PostgreSQL schema: the
// outbox is the store's.
//
//	pub, err := publish.NewHTTP(publish.HTTPOptions{URL: "http://127.0.0.1:8080/events"})
//	if err != nil { ... }
//	defer pub.Close()
//	r, err := publish.New(publish.Options{Store: s, Publisher: pub, Logger: log})
//	if err != nil { ... }
//	err = r.Run(ctx) // until ctx ends; Options.Once drains and returns
//
// # Guarantees
//
//   - At least once: an event is marked published only after the
//     destination acknowledged it (a JetStream publish ack; a 2xx
//     response; a flushed write). A crash anywhere in between leaves the
//     event pending, and it is published again.
//   - Tracing: the relay starts a send span per round (its own trace,
//     linked to the events' origins) and one per message, parented on the
//     event's stored traceparent; NATS and HTTP messages carry that span's
//     context as per-hop traceparent/tracestate headers (Message.Headers,
//     handed to the Publisher with each event), while
//     ce-traceparent keeps the origin unchanged. With no TracerProvider set,
//     no span starts and no header is added.
//   - Repeats are harmless: every copy of an event carries the same id.
//     NATS messages carry Nats-Msg-Id = "<tenant>:<event id>" (unique
//     across tenants) and JetStream stores one copy per id, but only within
//     the stream's duplicate_window (2 minutes by default; a stream made
//     with --create-stream keeps 10). A retry after the window is stored
//     again: consumers keep an inbox keyed by the id (eventlite's projection
//     consumers do), and outbox rows older than the window deserve an alert.
//   - Per stream, in order: rows are read in position order; when an event
//     of a stream cannot be published, the stream's later events wait
//     (other streams go on), and a dead letter parks its stream until an
//     operator retries or discards it (eventlite dlq). Within one batch the
//     NATS publisher sends events pipelined, in order, on one connection,
//     which JetStream stores in order; it checks what it can before sending
//     (encoding, size against max_payload) and sends nothing after such a
//     failure in the same stream. A batch is sent only once every ack of
//     the one before came back; the relay reads the next batch while one
//     is published, and writes a batch's marks while the next is
//     published, only when the batch went out whole. A message the server
//     refuses after later messages of its stream were accepted (rare: a
//     stream limit) can leave those later ones stored first; the relay does
//     not mark them, and publishes them again, deduped, after the refused
//     one. Consumers enforce versions in any case.
//   - One writer: the relay holds the "relay" lease (15 s, renewed every
//     5 s) and every write it makes carries the lease's fencing token; the
//     store refuses a stale token in the same transaction. Relays in other
//     processes stand by and take over when the lease is released or
//     expires. A holder that was paused past its lease may still push its
//     batch to the broker (deduped by id), but none of its writes land.
//   - Failures by class. Broker unreachable (connection refused, no
//     responders, every publish failing while the destination does not
//     answer a ping): back off, capped, with jitter; no attempt is counted
//     and rows wait however long it takes. Stats.UnreachableSince says
//     since when (zero while it is reachable), and the logger gets one
//     warning when it goes down and an info line when it is back, not one
//     per round. Transient (timeouts, 5xx, 408,
//     429, a lost ack, an HTTP sink that drops the connection): retried
//     with exponential backoff up to Options.MaxAttempts, then
//     dead-lettered. A publish that found the destination unreachable in a
//     round where another request succeeded, and that still answers a
//     ping, counts as transient: one event cannot hold the others behind
//     the backoff for ever. Permanent (4xx, an event larger than the
//     broker's max_payload, a subject longer than the server's
//     max_control_line, an event its encoding cannot carry exactly):
//     dead-lettered at once. A dead letter keeps the error, its attempts
//     and times.
//   - One stream's trouble costs the others at most one request timeout
//     per round: the HTTP publisher sends streams side by side, a stream
//     stops at its first failure, and only a failure to connect stops the
//     round's other requests.
//   - Stopping: when ctx ends (SIGINT, SIGTERM) the relay abandons the
//     batch in flight (its rows stay pending), releases its lease and
//     returns, within 2 s even while it backs off.
//
// # Durability of a JetStream ack
//
// A JetStream ack need not mean the message is on disk: see package
// natsjs.
//
// # Publishers
//
// natsjs.Publisher publishes CloudEvents binary mode (ce- headers written through
// sdk-go's binding) to a subject from a template, "eventlite.{tenant}.{type}"
// by default, each value escaped ("a.b" becomes "a_2Eb") so that two tenants,
// streams or types never share a subject; HTTP posts with sdk-go's CloudEvents HTTP client, binary mode
// by default or structured; Stdout writes JSON Lines. Every publisher
// passes one shared test suite: delivery, order per stream, dedupe, and
// failure classification. The suite is exported
// (publishtest.RunPublisherSuite in publish/publishtest), so a publisher
// of your own can prove the same.
package publish
