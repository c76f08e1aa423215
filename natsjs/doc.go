// Package natsjs is eventlite's NATS JetStream edge: the relay's
// publisher (Publisher, a publish.Publisher) with its subject templates, and
// the loop that feeds a projection.Consumer from a durable JetStream pull
// consumer (RunJetStream, DecodeMessage). It is the only eventlite package
// that imports nats.go; store, projection, publish and replay do not, so a
// service that relays to HTTP or standard output links no NATS code. The
// in-process JetStream server for tests is in natsjs/natstest, so that
// linking the publisher does not link nats-server.
//
// It reaches the store through package publish and projection only, so it
// relays from, and consumes into, either engine.
//
//	pub, err := natsjs.NewPublisher(ctx, natsjs.Options{URL: "nats://127.0.0.1:4222", CreateStream: true, Logger: log})
//	if err != nil { ... }
//	defer pub.Close()
//	r, err := publish.New(publish.Options{Store: s, Publisher: pub, Logger: log})
//	if err != nil { ... }
//	err = r.Run(ctx) // until ctx ends; Options.Once drains and returns
//
// and on the consuming side:
//
//	c, err := projection.NewConsumer(s, projection.ConsumerOptions{Name: "balances", Apply: apply, Logger: log})
//	if err != nil { ... }
//	err = natsjs.RunJetStream(ctx, js, c, natsjs.JetStreamOptions{Stream: natsjs.DefaultStream})
//
// # Guarantees
//
//   - Publishing: each message carries the event in CloudEvents binary
//     mode (ce- headers, the same bytes as sdk-go's binding) and
//     Nats-Msg-Id = "<tenant>:<event id>" (MessageID), unique across
//     tenants, so JetStream stores one copy per event within the stream's
//     duplicate window (DuplicateWindow for a stream NewPublisher creates); an
//     ack that says duplicate counts as delivered. Events go pipelined, in
//     order, on one connection; an event that cannot be encoded, is larger
//     than the server's max_payload or makes a publish line longer than
//     its max_control_line fails Permanent before it is sent, and its
//     stream's later events in the call are not sent. The publisher passes
//     publish's conformance suite (publishtest.RunPublisherSuite).
//   - Subjects: the template's placeholders {tenant}, {type} and {stream}
//     each fill a token of their own, escaped injectively ('.', '*', '>',
//     '_', white space, control characters and invalid UTF-8 become '_'
//     and two hex digits: "a.b" is "a_2Eb"), so two tenants, streams or types never share a subject and a
//     subject filter on one tenant sees that tenant's events only.
//   - Consuming: RunJetStream acknowledges a message only after the
//     consumer's transaction committed; a transient failure naks it with a
//     delay; a message that does not decode, or fails MaxDeliver times, is
//     quarantined with the evidence and terminated, never redelivered for
//     ever. It returns nil when ctx ends and an error matching
//     store.ErrClosed when the store is closed.
//
// # Durability of a JetStream ack
//
// By default nats-server acknowledges a publish before the message is on
// disk (it syncs every 2 minutes), so a power loss can lose messages that
// were acknowledged, and whose outbox rows are already marked published.
// Where an ack must mean durable, run the server with
// "jetstream { sync_interval: always }" (it costs most of the broker's
// throughput), or replicate the stream (R3) across machines.
package natsjs
