package aggregate

import (
	"context"
	"encoding/json"
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

// Definition describes one aggregate type: how its state folds from its
// events (Evolve) and how a command becomes new events (Decide).
type Definition[S any] struct {
	// Name of the aggregate type, such as "order". Required. It prefixes
	// operation types in the ledger and the default event source.
	Name string
	// Registry maps event types to the Go types of their data (and
	// upcasts old schema versions). Required: Decide returns values of
	// registered types, Evolve receives them decoded.
	Registry *envelope.Registry
	// Initial returns the state of an aggregate with no events. Default:
	// the zero S.
	Initial func() S
	// Evolve folds one event into the state and returns the new state.
	// It must be deterministic and must not fail: validation belongs in
	// Decide. Required, unless Evolvers is set instead.
	Evolve func(state S, ev Event) S
	// Evolvers are Evolve written per Go event type (see On): each
	// receives its event's data as its own type. New refuses a registry
	// event type with no evolver. Set Evolve or Evolvers, not both.
	Evolvers *Evolvers[S]
	// Erased folds an erased event: one whose subject was forgotten (see
	// package store/erasure), read with its attributes and no data
	// (envelope.Erased). Evolve never receives one. Default: the state is
	// unchanged (the version still moves past the event). Forgetting drops
	// the stream's snapshots, so the state is folded again from the
	// events, erased ones through this hook.
	Erased func(state S, ev envelope.Event) S
	// Decide turns a command into new events: values of registered Go
	// types, appended in order. An error is a business rule violation:
	// Handle returns it unchanged and appends nothing. No events and no
	// error is a command with nothing to do. Required, unless Deciders is
	// set instead.
	Decide func(state S, cmd Command) ([]any, error)
	// Deciders are Decide written per Go command type (see OnCommand):
	// each receives its command's payload as its own type and returns
	// typed events. Set Decide or Deciders, not both.
	Deciders *Deciders[S]
	// Source is the CloudEvents source of the events produced. Default
	// the Registry's (envelope.Registry.SetSource), else
	// "/eventlite/<Name>".
	Source string
	// SnapshotEvery, when positive, stores a snapshot of the state each
	// time the stream's version passes a multiple of it. Default 0: no
	// snapshots. S must then round-trip through encoding/json.
	SnapshotEvery int
	// SnapshotSchema is the state's schema version. Raise it whenever S
	// changes shape: snapshots of another schema version are ignored.
	// Default 1.
	SnapshotSchema int
}

// Event is one stored event handed to Evolve: the envelope with its data
// decoded (after upcasting) into Payload, a value of the registered type.
type Event struct {
	envelope.Event
	Payload any
}

// Command asks an aggregate to change.
type Command struct {
	// Tenant owns the aggregate. Default "default".
	Tenant string
	// Stream is the aggregate's stream id. Required.
	Stream string
	// OperationID, when set, makes the command idempotent: the first
	// execution's result is recorded in the same transaction as its
	// events; a retry with the same id and input returns it and appends
	// nothing; the same id with another input is refused with
	// store.ErrIdempotencyMismatch. Ids never cross tenants.
	OperationID string
	// ID identifies this command; produced events carry it as their
	// causation id. Default: OperationID when set, else a new ULID.
	ID string
	// CorrelationID is copied to every produced event. Default: ID.
	CorrelationID string
	// Expected is the stream version the caller decided on (the version a
	// form showed, say). The zero value, store.Any, loads, decides and
	// retries on a conflict. Any other value is checked against the
	// loaded version before Decide runs: a mismatch returns the
	// *store.ConflictError at once, without retrying, appending or
	// recording anything (the user must look again).
	Expected store.Expected
	// ErasureKey, when set, is the erasurekey extension of every event
	// the command appends: their data is encrypted with the subject's key
	// and erased when the subject is forgotten (see package store/erasure; the
	// store needs a master key).
	ErasureKey string
	// Payload is the command itself. Its Go type names the operation and,
	// with its JSON encoding, makes the input hash. Top-level struct fields
	// tagged `idem:"-"` (timestamps the caller fills in, say) are left out
	// of the hash.
	Payload any
}

// Options configures a Handler. nil means the defaults.
type Options struct {
	// MaxAttempts bounds load-decide-append rounds on version conflicts.
	// Default 3.
	MaxAttempts int
	// Logger receives structured logs. Default: none.
	Logger hclog.Logger
	// TracerProvider starts the command and attempt spans. Default:
	// otel's global provider, looked up at each command.
	TracerProvider trace.TracerProvider
}

// Result is the outcome of a handled command.
type Result struct {
	Tenant string `json:"tenant"`
	Stream string `json:"stream"`
	// Version is the stream's version after the command.
	Version int64 `json:"version"`
	// Positions of the appended events (none for a command with nothing to
	// do).
	Positions []int64 `json:"positions"`
	// EventIDs of the appended events.
	EventIDs []string `json:"event_ids"`
	// Replayed is true when the result came from the operation ledger: the
	// command had already been carried out and nothing was appended now.
	Replayed bool `json:"-"`
}

// LastPosition returns the position of the last appended event, or 0 when
// nothing was appended: pass it to projection.WaitFor, which takes 0 as
// nothing to wait for.
func (r Result) LastPosition() int64 { return command.LastPosition(r.Positions) }

// Handler loads aggregates, runs Decide and appends, for one aggregate
// type. It is safe for concurrent use.
type Handler[S any] struct {
	store  *store.Store
	def    Definition[S]
	evolve func(S, Event) S
	decide func(S, Command) ([]any, error)
	opts   command.Options
	ledger command.Ledger
	log    hclog.Logger
}

// New returns a handler for def on s. It checks def up front.
func New[S any](s *store.Store, def Definition[S], opts *Options) (*Handler[S], error) {
	switch {
	case s == nil:
		return nil, errors.New("aggregate: nil store")
	case def.Name == "":
		return nil, errors.New("aggregate: Definition.Name is required")
	case def.Registry == nil:
		return nil, fmt.Errorf("aggregate %s: Definition.Registry is required", def.Name)
	case (def.Evolve == nil) == (def.Evolvers == nil):
		return nil, &DefinitionError{def.Name, "Evolve", "set exactly one of Evolve and Evolvers"}
	case (def.Decide == nil) == (def.Deciders == nil):
		return nil, &DefinitionError{def.Name, "Decide", "set exactly one of Decide and Deciders"}
	case def.SnapshotEvery < 0 || def.SnapshotSchema < 0:
		return nil, fmt.Errorf("aggregate %s: SnapshotEvery and SnapshotSchema must not be negative", def.Name)
	}
	evolve, decide := def.Evolve, def.Decide
	if def.Evolvers != nil {
		var err error
		if evolve, err = typedEvolve(def.Name, def.Evolvers, def.Registry); err != nil {
			return nil, err
		}
	}
	if def.Deciders != nil {
		var err error
		if decide, err = typedDecide(def.Name, def.Deciders, def.Registry); err != nil {
			return nil, err
		}
	}
	def.Source = command.Source(def.Source, def.Registry, def.Name)
	if def.SnapshotSchema == 0 {
		def.SnapshotSchema = 1
	}
	var o command.Options
	if opts != nil {
		o = command.Options{MaxAttempts: opts.MaxAttempts, Logger: opts.Logger, Trace: tracing.Config{TP: opts.TracerProvider}}
	}
	if err := o.Defaults("aggregate " + def.Name); err != nil {
		return nil, err
	}
	return &Handler[S]{store: s, def: def, evolve: evolve, decide: decide, opts: o, ledger: command.Ledger{Store: s},
		log: o.Logger.Named("aggregate." + def.Name)}, nil
}

func (h *Handler[S]) initial() S {
	if h.def.Initial != nil {
		return h.def.Initial()
	}
	var zero S
	return zero
}

// Load returns an aggregate's current state and version (0 and the
// initial state when the stream does not exist). With snapshots on, it
// starts from the newest snapshot of the current schema version and reads
// only the newer events.
func (h *Handler[S]) Load(ctx context.Context, tenant, stream string) (S, int64, error) {
	if tenant == "" {
		tenant = "default"
	}
	state, version := h.initial(), int64(0)
	if h.def.SnapshotEvery > 0 {
		snap, ok, err := h.store.Aggregates().LoadSnapshot(ctx, tenant, stream, h.def.SnapshotSchema)
		if err != nil {
			return state, 0, err
		}
		if ok {
			s := h.initial()
			if err := json.Unmarshal(snap.State, &s); err != nil {
				h.log.Warn("ignoring a snapshot that does not decode", "tenant", tenant, "stream", stream, "version", snap.Version, "error", err)
			} else {
				state, version = s, snap.Version
			}
		}
	}
	for e, err := range h.store.ReadStream(ctx, tenant, stream, store.ReadStreamOptions{From: version + 1}) {
		if errors.Is(err, store.ErrNotFound) {
			return state, 0, nil
		}
		if err != nil {
			return state, 0, fmt.Errorf("load %s %q: %w", h.def.Name, stream, err)
		}
		if envelope.Erased(e) {
			if h.def.Erased != nil {
				state = h.def.Erased(state, e)
			}
			version = e.StreamVersion
			continue
		}
		p, err := h.def.Registry.Decode(e)
		if err != nil {
			return state, 0, fmt.Errorf("load %s %q: event %d (%s): %w", h.def.Name, stream, e.StreamVersion, e.ID, err)
		}
		state = h.evolve(state, Event{Event: e, Payload: p})
		version = e.StreamVersion
	}
	return state, version, nil
}

// handle is Handle without its span.
func (h *Handler[S]) handle(ctx context.Context, cmd Command) (Result, error) {
	if cmd.Tenant == "" {
		cmd.Tenant = "default"
	}
	if err := envelope.ValidateTenant(cmd.Tenant); err != nil {
		return Result{}, err
	}
	if err := envelope.ValidateStream(cmd.Stream); err != nil {
		return Result{}, err
	}
	if cmd.Payload == nil {
		return Result{}, &envelope.InvalidError{Index: -1, Field: "payload", Reason: "a command needs a payload"}
	}
	if err := command.IDs(&cmd.Tenant, cmd.OperationID, &cmd.ID, &cmd.CorrelationID); err != nil {
		return Result{}, err
	}
	op, err := command.Operation(cmd.Tenant, cmd.OperationID, command.OpType(h.def.Name, reflect.TypeOf(cmd.Payload)), cmd.Stream, cmd.Payload, cmd.ErasureKey)
	if err != nil {
		return Result{}, err
	}
	// Fast path for a retry: the ledger already has the answer.
	if stored, ok, err := h.ledger.Lookup(ctx, op); err != nil {
		return Result{}, err
	} else if ok {
		return h.replay(ctx, stored, *op, cmd.Stream)
	}
	retry := func(err error) bool {
		var stale *staleCommand
		return !errors.As(err, &stale) && errors.Is(err, store.ErrConflict)
	}
	moved := func(ctx context.Context, n int, err error) {
		tracing.Logger(ctx, h.log).Debug("version conflict; loading and deciding again", "stream", cmd.Stream, "attempt", n, "error", err)
	}
	res, err, exhausted := command.Attempts(ctx, &h.opts, cmd.ID, retry, moved, func(ctx context.Context) (Result, error) {
		return h.attempt(ctx, cmd, op)
	})
	var stale *staleCommand
	switch {
	case errors.As(err, &stale):
		return Result{}, stale.ConflictError
	case exhausted:
		return Result{}, fmt.Errorf("%s %q: gave up after %d attempts: %w", h.def.Name, cmd.Stream, h.opts.MaxAttempts, err)
	}
	return res, err
}

// staleCommand: the command's Expected does not hold for the loaded
// version; Handle returns the conflict without retrying.
type staleCommand struct{ *store.ConflictError }

func (h *Handler[S]) attempt(ctx context.Context, cmd Command, op *store.Operation) (Result, error) {
	state, version, err := h.Load(ctx, cmd.Tenant, cmd.Stream)
	if err != nil {
		return Result{}, err
	}
	if !holds(cmd.Expected, version) {
		// The same operation may have just been carried out by a
		// concurrent call: its result is the answer, not a conflict.
		if stored, ok, err := h.ledger.Lookup(ctx, op); err != nil {
			return Result{}, err
		} else if ok {
			return h.replay(ctx, stored, *op, cmd.Stream)
		}
		return Result{}, &staleCommand{&store.ConflictError{Tenant: cmd.Tenant, Stream: cmd.Stream, Expected: cmd.Expected, Actual: version}}
	}
	payloads, err := h.decide(state, cmd)
	if err != nil {
		return Result{}, err
	}
	events := make([]envelope.Event, 0, len(payloads))
	meta := command.Meta{Source: h.def.Source, CorrelationID: cmd.CorrelationID, CausationID: cmd.ID, ErasureKey: cmd.ErasureKey}
	for i, p := range payloads {
		e, err := command.Encode(h.def.Registry, h.def.Name, i, p, meta)
		if err != nil {
			return Result{}, err
		}
		events = append(events, e)
	}
	res := Result{Tenant: cmd.Tenant, Stream: cmd.Stream, Version: version}
	answered, err := h.ledger.Commit(ctx, op, func(tx *store.Tx) error {
		if len(events) > 0 {
			ar, err := tx.Append(ctx, cmd.Tenant, cmd.Stream, store.Exact(version), events...)
			if err != nil {
				return err
			}
			res.Version = ar.Version
			for _, e := range ar.Events {
				res.Positions = append(res.Positions, e.Position)
				res.EventIDs = append(res.EventIDs, e.ID)
			}
			if err := h.maybeSnapshot(ctx, tx, cmd, state, version, ar.Events, payloads); err != nil {
				return err
			}
		}
		return nil
	}, func() any { return res })
	if err != nil {
		return Result{}, err
	}
	if answered != nil {
		return h.replay(ctx, *answered, *op, cmd.Stream)
	}
	return res, nil
}

// maybeSnapshot saves the state after the new events when the version
// passed a multiple of SnapshotEvery.
func (h *Handler[S]) maybeSnapshot(ctx context.Context, tx *store.Tx, cmd Command, state S, from int64, stored []envelope.Event, payloads []any) error {
	n := int64(h.def.SnapshotEvery)
	if n <= 0 || len(stored) == 0 {
		return nil
	}
	to := stored[len(stored)-1].StreamVersion
	if to/n == from/n {
		return nil
	}
	for i, e := range stored {
		state = h.evolve(state, Event{Event: e, Payload: payloads[i]})
	}
	b, err := json.Marshal(state)
	if err != nil {
		h.log.Warn("state does not encode; no snapshot", "stream", cmd.Stream, "error", err)
		return nil
	}
	return tx.SaveSnapshot(ctx, store.Snapshot{Tenant: cmd.Tenant, Stream: cmd.Stream, SchemaVersion: h.def.SnapshotSchema, Version: to, State: b})
}

// holds reports whether expected holds for a stream at version.
func holds(expected store.Expected, version int64) bool {
	switch expected {
	case store.Any:
		return true
	case store.NoStream:
		return version == 0
	case store.StreamExists:
		return version > 0
	}
	n, _ := expected.Version()
	return version == n
}

// replay answers a repeated operation, given on stream, from the
// ledger. A mismatch names what differs: the stored result names the
// first operation's stream.
func (h *Handler[S]) replay(ctx context.Context, stored, given store.Operation, stream string) (Result, error) {
	var r Result
	if err := h.ledger.Replay(ctx, stored, given, &r, stream, func() string { return r.Stream }); err != nil {
		return Result{}, err
	}
	r.Replayed = true
	return r, nil
}
