package decision

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/command"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/store"
)

// Definition describes one decision: the command it takes (C), the
// events it depends on (Query), how they fold into its state (S) and how
// the state and the command become new events (Decide).
type Definition[S, C any] struct {
	// Name of the decision, such as "register_user". Required. It
	// prefixes the operation type in the ledger and the default event
	// source.
	Name string
	// Registry maps event types to the Go types of their data (and
	// upcasts old schema versions). Required: Decide returns values of
	// registered types, evolvers receive them decoded.
	Registry *envelope.Registry
	// Query returns the consistency boundary of a command: the events
	// (types and tags, in the command's tenant) the decision depends on.
	// Required. The events it matches are folded in position order; the
	// append then carries the condition that no event matching it was
	// appended after the position read.
	Query func(cmd C) store.Query
	// Initial returns the state before any event is folded. It receives
	// the command, so that the state can hold the ids the evolvers look
	// for (the course and the student of a subscription). Default: the
	// zero S.
	Initial func(cmd C) S
	// Evolvers fold the events the query matches, one per Go event type
	// (see On). Required. Erased events (their subject was forgotten)
	// carry no data and no tags and are skipped.
	Evolvers *Evolvers[S]
	// Decide turns the state and the command into new events, each naming
	// its stream and tags. An error is a business rule violation: Handle
	// returns it unchanged and appends nothing. No events and no error is
	// a command with nothing to do. Required.
	Decide func(state S, cmd Command[C]) ([]Event, error)
	// Source is the CloudEvents source of the events appended. Default the
	// Registry's (envelope.Registry.SetSource), else "/eventlite/<Name>".
	Source string
}

// Command asks a decision to be made.
type Command[C any] struct {
	// Tenant whose events are read and appended. Default "default".
	Tenant string
	// OperationID, when set, makes the command idempotent, as
	// aggregate.Command's: the first execution's result is recorded in
	// the transaction of its events; a retry with the same id and input
	// returns it and appends nothing; the same id with another input is
	// refused with store.ErrIdempotencyMismatch. Ids never cross tenants
	// and share the ledger with aggregate commands.
	OperationID string
	// ID identifies this command; appended events carry it as their
	// causation id. Default: OperationID when set, else a new ULID.
	ID string
	// CorrelationID is copied to every appended event. Default: ID.
	CorrelationID string
	// ErasureKey, when set, is the erasurekey extension of every event the
	// command appends (see package store/erasure; the store needs a master key).
	ErasureKey string
	// Payload is the command itself. Its JSON encoding makes the input
	// hash; top-level struct fields tagged `idem:"-"` are left out of it.
	Payload C
}

// Event is a new event a decision appends: the stream it goes to (every
// eventlite event has one), its tags, and its data, a value of a
// registered type.
type Event struct {
	// Stream is the stream id. Required.
	Stream string
	// Tags are the event's tags: what later queries find it by.
	Tags []string
	// Payload is the event's data, a value of a registered Go type.
	Payload any
}

// Options configures a Handler. nil means the defaults.
type Options struct {
	// MaxAttempts bounds read-decide-append rounds when an event matching
	// the query was appended meanwhile. Default 3.
	MaxAttempts int
	// Logger receives structured logs. Default: none.
	Logger hclog.Logger
	// TracerProvider starts the command, attempt, read and decide spans.
	// Default: otel's global provider, looked up at each command.
	TracerProvider trace.TracerProvider
}

// Result is the outcome of a handled command.
type Result struct {
	Tenant string `json:"tenant"`
	// Streams, Positions and EventIDs describe the appended events, in
	// order (none for a command with nothing to do).
	Streams   []string `json:"streams"`
	Positions []int64  `json:"positions"`
	EventIDs  []string `json:"event_ids"`
	// Replayed is true when the result came from the operation ledger: the
	// command had already been carried out and nothing was appended now.
	Replayed bool `json:"-"`
}

// LastPosition returns the position of the last appended event, or 0 when
// nothing was appended (what projection.WaitFor takes as nothing to wait
// for).
func (r Result) LastPosition() int64 { return command.LastPosition(r.Positions) }

// Handler reads, folds, decides and appends, for one decision. It is safe
// for concurrent use.
type Handler[S, C any] struct {
	store  *store.Store
	def    Definition[S, C]
	opType string
	opts   command.Options
	ledger command.Ledger
	log    hclog.Logger
}

// New returns a handler for def on s. It checks def up front.
func New[S, C any](s *store.Store, def Definition[S, C], opts *Options) (*Handler[S, C], error) {
	switch {
	case s == nil:
		return nil, errors.New("decision: nil store")
	case def.Name == "":
		return nil, errors.New("decision: Definition.Name is required")
	case def.Registry == nil:
		return nil, &DefinitionError{def.Name, "Registry", "required"}
	case def.Query == nil:
		return nil, &DefinitionError{def.Name, "Query", "required: the events the decision depends on"}
	case def.Evolvers == nil:
		return nil, &DefinitionError{def.Name, "Evolvers", "required: add one with decision.On for each event type the query matches"}
	case def.Decide == nil:
		return nil, &DefinitionError{def.Name, "Decide", "required"}
	}
	if err := checkEvolvers(def.Name, def.Evolvers, def.Registry); err != nil {
		return nil, err
	}
	def.Source = command.Source(def.Source, def.Registry, def.Name)
	var o command.Options
	if opts != nil {
		o = command.Options{MaxAttempts: opts.MaxAttempts, Logger: opts.Logger, Trace: tracing.Config{TP: opts.TracerProvider}}
	}
	if err := o.Defaults("decision " + def.Name); err != nil {
		return nil, err
	}
	return &Handler[S, C]{store: s, def: def, opType: command.OpType(def.Name, reflect.TypeFor[C]()), opts: o, ledger: command.Ledger{Store: s},
		log: o.Logger.Named("decision." + def.Name)}, nil
}

// handle is Handle without its span.
func (h *Handler[S, C]) handle(ctx context.Context, cmd Command[C]) (Result, error) {
	if err := command.IDs(&cmd.Tenant, cmd.OperationID, &cmd.ID, &cmd.CorrelationID); err != nil {
		return Result{}, err
	}
	op, err := command.Operation(cmd.Tenant, cmd.OperationID, h.opType, "", cmd.Payload, cmd.ErasureKey)
	if err != nil {
		return Result{}, err
	}
	// Fast path for a retry: the ledger already has the answer.
	if stored, ok, err := h.ledger.Lookup(ctx, op); err != nil {
		return Result{}, err
	} else if ok {
		return h.replay(ctx, stored, *op)
	}
	moved := func(ctx context.Context, n int, err error) {
		tracing.Logger(ctx, h.log).Debug("the boundary moved; reading and deciding again", "tenant", cmd.Tenant, "attempt", n, "error", err)
	}
	res, err, exhausted := command.Attempts(ctx, &h.opts, cmd.ID, retryable, moved, func(ctx context.Context) (Result, error) {
		return h.attempt(ctx, cmd, op)
	})
	if exhausted {
		return Result{}, fmt.Errorf("decision %s: gave up after %d attempts: %w", h.def.Name, h.opts.MaxAttempts, err)
	}
	return res, err
}

// fold reads the events of q in tenant and folds them into the initial
// state. after is the position the decision is made at: the newest
// matching event's, or the head read before the events when none (or
// only older ones) matched, so that an event matching q that the read
// did not see is always after it.
func (h *Handler[S, C]) fold(ctx context.Context, tenant string, q store.Query, payload C, read *int) (S, int64, error) {
	var state S
	if h.def.Initial != nil {
		state = h.def.Initial(payload)
	}
	// The head first: an event committed after this read is above it,
	// so the condition sees it even when the query read below missed it.
	after, err := h.store.Head(ctx)
	if err != nil {
		return state, 0, err
	}
	for e, err := range h.store.ReadAll(ctx, store.ReadAllOptions{Tenant: tenant, Query: q}) {
		if err != nil {
			return state, 0, fmt.Errorf("decision %s: read: %w", h.def.Name, err)
		}
		after = max(after, e.Position)
		*read++
		if envelope.Erased(e) {
			continue
		}
		p, err := h.def.Registry.Decode(e)
		if err != nil {
			return state, 0, fmt.Errorf("decision %s: event %d (%s): %w", h.def.Name, e.Position, e.ID, err)
		}
		fn := h.def.Evolvers.set.ByGo[reflect.TypeOf(p)]
		if fn == nil {
			return state, 0, &DefinitionError{h.def.Name, "Evolvers", fmt.Sprintf("event %d of type %q (Go type %T) matches the query and has no evolver: add decision.On for it, or narrow the query", e.Position, e.Type, p)}
		}
		state = fn(state, e, p)
	}
	return state, after, nil
}

func (h *Handler[S, C]) attempt(ctx context.Context, cmd Command[C], op *store.Operation) (Result, error) {
	q := h.def.Query(cmd.Payload)
	state, after, err := h.tracedFold(ctx, cmd.Tenant, q, cmd.Payload)
	if err != nil {
		return Result{}, err
	}
	decided, err := h.tracedDecide(ctx, state, cmd)
	if err != nil {
		// The same operation may have just been carried out by a
		// concurrent call, whose events made Decide refuse: its result
		// is the answer. Its ledger row committed with the events the
		// fold read, so the read below sees it.
		if stored, ok, lerr := h.ledger.Lookup(ctx, op); lerr != nil {
			return Result{}, lerr
		} else if ok {
			return h.replay(ctx, stored, *op)
		}
		return Result{}, err
	}
	events := make([]envelope.Event, 0, len(decided))
	meta := command.Meta{Source: h.def.Source, CorrelationID: cmd.CorrelationID, CausationID: cmd.ID, ErasureKey: cmd.ErasureKey}
	for i, d := range decided {
		if err := envelope.ValidateStream(d.Stream); err != nil {
			return Result{}, fmt.Errorf("decision %s: event %d: %w", h.def.Name, i, err)
		}
		e, err := command.Encode(h.def.Registry, "decision "+h.def.Name, i, d.Payload, meta)
		if err != nil {
			return Result{}, err
		}
		e.Stream = d.Stream
		e.Tags = d.Tags
		events = append(events, e)
	}
	res := Result{Tenant: cmd.Tenant}
	answered, err := h.ledger.Commit(ctx, op, func(tx *store.Tx) error {
		cond := &store.Condition{Query: q, After: after}
		// Consecutive events of one stream go in one append; the condition
		// rides on the first, before any of this decision's events exist
		// (the later appends would match their own predecessors).
		for i := 0; i < len(events); {
			j := i + 1
			for j < len(events) && events[j].Stream == events[i].Stream {
				j++
			}
			ar, err := appendIf(ctx, tx, cmd.Tenant, events[i].Stream, cond, events[i:j])
			if err != nil {
				return err
			}
			cond = nil
			for _, e := range ar.Events {
				res.Streams = append(res.Streams, e.Stream)
				res.Positions = append(res.Positions, e.Position)
				res.EventIDs = append(res.EventIDs, e.ID)
			}
			i = j
		}
		return nil
	}, func() any { return res })
	if err != nil {
		return Result{}, err
	}
	if answered != nil {
		return h.replay(ctx, *answered, *op)
	}
	return res, nil
}

// replay answers a repeated operation from the ledger.
func (h *Handler[S, C]) replay(ctx context.Context, stored, given store.Operation) (Result, error) {
	var r Result
	if err := h.ledger.Replay(ctx, stored, given, &r, "", nil); err != nil {
		return Result{}, err
	}
	r.Replayed = true
	return r, nil
}
