package natsjs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// JetStreamOptions configure RunJetStream.
type JetStreamOptions struct {
	// Stream is the JetStream stream to read. Default DefaultStream (the
	// NATS publisher's default, "EVENTLITE").
	Stream string
	// Durable names the durable pull consumer. Default the consumer's name.
	Durable string
	// FilterSubject, when set, limits the subjects read.
	FilterSubject string
	// Batch is how many messages one fetch asks for. Default 256.
	Batch int
	// AckWait is how long the server waits for an ack before it redelivers.
	// Default 30s.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of a message that keeps failing with a
	// transient error; after that it is quarantined and terminated, never
	// redelivered forever. Default 10.
	MaxDeliver int
	// NakDelay is how long the server waits before redelivering a message
	// that failed with a transient error. Default 1s.
	NakDelay time.Duration
	// SweepEvery is how often deferred events are checked against the
	// consumer's DeferFor (Consumer.Sweep). Default 30s.
	SweepEvery time.Duration
	// MaxData limits decoded data, as envelope.Validate does. Default
	// envelope.DefaultMaxDataBytes.
	MaxData int
}

func (o *JetStreamOptions) defaults(c *projection.Consumer) {
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.Durable == "" {
		o.Durable = c.Name()
	}
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 10
	}
	if o.NakDelay <= 0 {
		o.NakDelay = time.Second
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = 30 * time.Second
	}
}

// DecodeMessage decodes a CloudEvent from a JetStream message: binary mode
// when it carries ce- headers, structured JSON otherwise.
func DecodeMessage(m jetstream.Msg, maxData int) (envelope.Event, error) {
	attrs := map[string]string{}
	for k, v := range m.Headers() {
		if len(v) > 0 && len(k) > 3 && strings.EqualFold(k[:3], "ce-") {
			attrs[strings.ToLower(k[3:])] = v[0]
		}
	}
	if len(attrs) > 0 {
		return envelope.DecodeBinary(attrs, m.Data(), maxData)
	}
	return envelope.DecodeJSON(m.Data(), maxData)
}

// RunJetStream feeds the consumer from a durable JetStream pull consumer
// until ctx ends (then it returns nil) or the store is closed (then it
// returns an error matching store.ErrClosed). Each message is acknowledged only
// after the consumer's transaction committed (a durably deferred event is
// acknowledged too); a transient error naks it with NakDelay; a message
// that does not decode, or fails MaxDeliver times, is quarantined with the
// evidence and terminated, never redelivered forever.
func RunJetStream(ctx context.Context, js jetstream.JetStream, c *projection.Consumer, opts JetStreamOptions) error {
	opts.defaults(c)
	parts := consumerPartsOf(c)
	cfg := jetstream.ConsumerConfig{
		Durable:       opts.Durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       opts.AckWait,
		FilterSubject: opts.FilterSubject,
		MaxAckPending: max(opts.Batch*4, 1024),
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, opts.Stream, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("consumer %s: JetStream consumer %s on %s: %w", c.Name(), opts.Durable, opts.Stream, err)
	}
	lastSweep := time.Now()
	for ctx.Err() == nil {
		select {
		case <-parts.Store.Done():
			return fmt.Errorf("consumer %s: %w", c.Name(), store.ErrClosed)
		default:
		}
		batch, err := cons.Fetch(opts.Batch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			parts.Log.Warn("fetch failed; retrying", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(opts.NakDelay):
			}
			continue
		}
		for m := range batch.Messages() {
			if err := handleMsg(ctx, c, parts, m, opts); err != nil {
				if ctx.Err() != nil {
					return nil // the message stays unacked: redelivered after AckWait
				}
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil {
			parts.Log.Debug("fetch ended", "error", err)
		}
		if _, err := c.ApplyRetries(ctx); err != nil && ctx.Err() == nil {
			parts.Log.Warn("applying retried events failed", "error", err)
		}
		if time.Since(lastSweep) >= opts.SweepEvery {
			lastSweep = time.Now()
			if _, err := c.Sweep(ctx); errors.Is(err, store.ErrClosed) {
				return err
			} else if err != nil && ctx.Err() == nil {
				parts.Log.Warn("sweep failed", "error", err)
			}
		}
	}
	return nil
}

func handleMsg(ctx context.Context, c *projection.Consumer, parts consumerParts, m jetstream.Msg, opts JetStreamOptions) error {
	meta, _ := m.Metadata()
	ctx = c.Extract(ctx, headerCarrier(m.Headers()))
	e, err := DecodeMessage(m, opts.MaxData)
	if err != nil {
		id := m.Headers().Get(jetstream.MsgIDHeader)
		if meta != nil && id == "" {
			id = fmt.Sprintf("%s#%d", meta.Stream, meta.Sequence.Stream)
		}
		if qerr := c.QuarantineMessage(ctx, projection.ReasonUndecodable, id, m.Data(), err, 1); qerr != nil {
			return qerr
		}
		return m.TermWithReason("undecodable: quarantined")
	}
	if _, err := c.Handle(ctx, e); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, store.ErrClosed) {
			return err // the message stays unacked: redelivered after AckWait
		}
		if meta != nil && int(meta.NumDelivered) >= opts.MaxDeliver {
			b, _ := e.MarshalJSON()
			if qerr := c.QuarantineMessage(ctx, projection.ReasonTooManyDelivered, e.ID, b, err, int(meta.NumDelivered)); qerr != nil {
				return qerr
			}
			return m.TermWithReason("failed too often: quarantined")
		}
		parts.Log.Warn("handling failed; the message comes again", "id", e.ID, "error", err)
		return m.NakWithDelay(opts.NakDelay)
	}
	return m.Ack()
}

// headerCarrier reads and writes NATS headers for a propagator. NATS
// headers are case-sensitive: keys are used as the propagator gives them
// (lowercase for W3C's traceparent and tracestate).
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { h[key] = []string{value} }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// consumerParts are what the consumer loop needs of a consumer beyond its
// exported methods: the store's closing and the consumer's logger.
type consumerParts struct {
	Store *store.Store
	Log   hclog.Logger
}

func consumerPartsOf(c *projection.Consumer) consumerParts {
	s, log := projection.ConsumerParts(inside.Key{}, c)
	return consumerParts{Store: s, Log: log}
}
