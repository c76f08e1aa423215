package store

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/testhook"
)

// Expected is the optimistic-concurrency condition of an append.
type Expected struct {
	kind    expectKind
	version int64
	// cond is the append condition If adds, nil for none.
	cond *Condition
}

type expectKind uint8

const (
	expectAny expectKind = iota
	expectNoStream
	expectExists
	expectExact
)

var (
	// Any appends whatever the stream's version.
	Any = Expected{kind: expectAny}
	// NoStream appends only when the stream does not exist yet.
	NoStream = Expected{kind: expectNoStream}
	// StreamExists appends only when the stream has at least one event.
	StreamExists = Expected{kind: expectExists}
)

// Exact appends only when the stream's version is n. Exact(0) is NoStream.
func Exact(n int64) Expected {
	if n == 0 {
		return NoStream
	}
	return Expected{kind: expectExact, version: n}
}

// ParseExpected reads the CLI's forms: any, no-stream, exists, or a
// version number (0 meaning no-stream).
func ParseExpected(s string) (Expected, error) {
	switch s {
	case "":
		return Expected{}, errors.New("expected version is empty: say any, no-stream, exists or a version number (an unset shell variable gives an empty string)")
	case "any":
		return Any, nil
	case "no-stream":
		return NoStream, nil
	case "exists":
		return StreamExists, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return Expected{}, fmt.Errorf("expected version %q: want any, no-stream, exists or a version number >= 0", s)
	}
	return Exact(n), nil
}

// Version returns n for Exact(n), and false for the other forms.
func (e Expected) Version() (int64, bool) { return e.version, e.kind == expectExact }

func (e Expected) String() string {
	switch e.kind {
	case expectNoStream:
		return "no stream"
	case expectExists:
		return "an existing stream"
	case expectExact:
		return "version " + strconv.FormatInt(e.version, 10)
	default:
		return "any version"
	}
}

// AppendResult is the outcome of an append.
type AppendResult struct {
	Tenant  string
	Stream  string
	Version int64 // the stream's version after the append
	// Events are the events as stored: ids, times, versions and positions
	// filled in. Positions are consecutive.
	Events []envelope.Event
	// Replayed is true when the append was a retry of an earlier one (the
	// same ids, type and data as the stream's newest events): Events are
	// the stored ones and nothing was written.
	Replayed bool
}

// FirstPosition is the position of the first appended event.
func (r AppendResult) FirstPosition() int64 {
	if len(r.Events) == 0 {
		return 0
	}
	return r.Events[0].Position
}

// LastPosition is the position of the last appended event.
func (r AppendResult) LastPosition() int64 {
	if len(r.Events) == 0 {
		return 0
	}
	return r.Events[len(r.Events)-1].Position
}

// Positions lists the appended events' positions.
func (r AppendResult) Positions() []int64 {
	p := make([]int64, len(r.Events))
	for i, e := range r.Events {
		p[i] = e.Position
	}
	return p
}

type appendReq struct {
	tenant, stream string
	expected       Expected
	events         []envelope.Event
	// sealed holds, for the events that carry erasurekey, their encrypted
	// data (what insertEvents stores) and aeads their data keys; both are
	// nil when no event does (see sealAppend).
	sealed  [][]byte
	aeads   []cipher.AEAD
	wrapped [][]byte // the wrapped data key of each sealed event (checkKeysLive)
	// cond is the append condition's query for the driver, nil for
	// none; condAfter its position.
	cond      *driver.Query
	condAfter int64
	// tagged: an event carries tags, whose index rows InsertEvents
	// writes with a second statement.
	tagged bool
}

// Append appends events to a tenant's stream if expected holds, in one
// transaction, and returns the stream's new version and the events'
// positions (the relay finds them above its watermark: see outbox.go). A
// failed expectation writes nothing and returns a *ConflictError.
//
// Event ids are unique per tenant. Appending events that are already
// stored (same ids, type and data, in this stream, as its newest events) is
// a retry: it returns the first result and writes nothing, whatever
// expected says. Any other reuse of a stored id returns a *DuplicateError.
//
// The events are validated before any transaction starts. The caller's
// slice is not modified.
func (s *Store) Append(ctx context.Context, tenant, stream string, expected Expected, events ...envelope.Event) (AppendResult, error) {
	ctx, sp, events := s.startAppend(ctx, tenant, stream, events)
	res, err := s.append(ctx, tenant, stream, expected, events)
	sp.end(res, err)
	return res, err
}

func (s *Store) append(ctx context.Context, tenant, stream string, expected Expected, events []envelope.Event) (AppendResult, error) {
	a, err := s.prepareAppend(tenant, stream, expected, events)
	if err != nil {
		return AppendResult{}, err
	}
	if err := s.sealAppend(ctx, a, nil); err != nil {
		return AppendResult{}, wrapAppendErr(stream, err)
	}
	testhook.AppendSealed(tenant, stream)
	r := &request{ctx: ctx, a: a, done: make(chan struct{})}
	if err := s.submit(ctx, r); err != nil {
		return AppendResult{}, wrapAppendErr(stream, err)
	}
	return r.res, nil
}

// wrapAppendErr adds the stream to an error that does not name it
// already (a *ConflictError and a *DuplicateError do).
func wrapAppendErr(stream string, err error) error {
	var ce *ConflictError
	var de *DuplicateError
	var cde *ConditionError
	if errors.As(err, &ce) || errors.As(err, &de) || errors.As(err, &cde) {
		return err
	}
	return fmt.Errorf("append to %q: %w", stream, err)
}

// Append appends inside an Update closure, so the caller's own writes
// and the events commit together. It behaves like Append; a failed append
// writes nothing and leaves the transaction usable.
func (tx *Tx) Append(ctx context.Context, tenant, stream string, expected Expected, events ...envelope.Event) (AppendResult, error) {
	if err := tx.check(); err != nil {
		return AppendResult{}, err
	}
	ctx, sp, events := tx.s.startAppend(ctx, tenant, stream, events)
	res, err := tx.append(ctx, tenant, stream, expected, events)
	sp.end(res, err)
	return res, err
}

func (tx *Tx) append(ctx context.Context, tenant, stream string, expected Expected, events []envelope.Event) (AppendResult, error) {
	if err := tx.check(); err != nil {
		return AppendResult{}, err
	}
	a, err := tx.s.prepareAppend(tenant, stream, expected, events)
	if err != nil {
		return AppendResult{}, err
	}
	if err := tx.s.sealAppend(ctx, a, tx); err != nil {
		return AppendResult{}, wrapAppendErr(stream, err)
	}
	return tx.appendPrepared(ctx, a)
}

// appendPrepared is tx.append of a prepared request.
func (tx *Tx) appendPrepared(ctx context.Context, a *appendReq) (AppendResult, error) {
	s, stream := tx.s, a.stream
	if err := ctx.Err(); err != nil {
		return AppendResult{}, wrapAppendErr(stream, err)
	}
	if err := s.stmts.Savepoint(bg, driver.AppendScope); err != nil {
		return AppendResult{}, fmt.Errorf("append to %q: %w", stream, mapErr(err))
	}
	res, err := s.appendLocked(a, tx.now, nil)
	if err != nil {
		_ = s.stmts.RollbackTo(bg, driver.AppendScope)
	}
	if errors.Is(err, errRetried) {
		err = nil // the first append's result; this attempt wrote nothing
	}
	if rerr := s.stmts.Release(bg, driver.AppendScope); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return AppendResult{}, wrapAppendErr(stream, err)
	}
	return res, nil
}

// prepareAppend validates and fills the events outside any transaction.
// It refuses types that start with envelope.ReservedTypePrefix.
func (s *Store) prepareAppend(tenant, stream string, expected Expected, events []envelope.Event) (*appendReq, error) {
	return s.prepareAppendAs(false, tenant, stream, expected, events)
}

// prepareAppendAs is prepareAppend; own lets the store append events of
// its own, whose types start with envelope.ReservedTypePrefix.
func (s *Store) prepareAppendAs(own bool, tenant, stream string, expected Expected, events []envelope.Event) (*appendReq, error) {
	if err := envelope.ValidateTenant(tenant); err != nil {
		return nil, err
	}
	if err := envelope.ValidateStream(stream); err != nil {
		return nil, err
	}
	if !own {
		if err := userStream("append to", tenant, stream); err != nil {
			return nil, err
		}
	}
	if len(events) == 0 {
		return nil, &envelope.InvalidError{Index: -1, Field: "events", Reason: "nothing to append"}
	}
	if expected.kind == expectExact && (expected.version < 0 || expected.version > envelope.MaxStreamVersion) {
		return nil, &envelope.InvalidError{Index: -1, Field: "expected", Reason: fmt.Sprintf("version %d is outside 0..%d", expected.version, envelope.MaxStreamVersion)}
	}
	var cond *driver.Query
	var condAfter int64
	if c := expected.cond; c != nil {
		if err := c.Query.Validate(); err != nil {
			return nil, err
		}
		if c.After < 0 {
			return nil, &envelope.InvalidError{Index: -1, Field: "condition", Reason: fmt.Sprintf("position %d is negative", c.After)}
		}
		cond, condAfter = c.Query.driverQuery(), c.After
	}
	now := s.opts.Now()
	evs := make([]envelope.Event, len(events))
	tagged := false
	// The ids of a batch must differ. Ids from one producer (ULIDs, the
	// ones Prepare fills in) mostly come in ascending order, which proves
	// them distinct without a set: ascending holds while every id is
	// greater than the one before, and seen is built only once an id is
	// not, from the ids before it, which are distinct.
	var seen map[string]int
	ascending := true
	for i := range events {
		e := events[i]
		if e.Stream != "" && e.Stream != stream {
			return nil, &envelope.InvalidError{Index: i, Field: "subject", Reason: fmt.Sprintf("%q differs from the stream %q appended to", e.Stream, stream)}
		}
		if e.Tenant != "" && e.Tenant != tenant {
			return nil, &envelope.InvalidError{Index: i, Field: "tenant", Reason: fmt.Sprintf("%q differs from the tenant %q appended to", e.Tenant, tenant)}
		}
		e.Stream, e.Tenant = stream, tenant
		e.Position, e.StreamVersion = 0, 0 // the store assigns them
		err := s.prepareEvent(&e, now)
		if err == nil && !own {
			err = checkErasureExtensions(i, &e)
		}
		if err == nil && !own && strings.HasPrefix(e.Type, envelope.ReservedTypePrefix) {
			err = &envelope.InvalidError{Index: -1, Field: "type", Reason: fmt.Sprintf("%q starts with %q, which is kept for the store's own events: choose another type", e.Type, envelope.ReservedTypePrefix)}
		}
		if err != nil {
			var ie *envelope.InvalidError
			var te *envelope.TooLargeError
			switch {
			case errors.As(err, &ie):
				c := *ie
				c.Index = i
				return nil, &c
			case errors.As(err, &te):
				c := *te
				c.Index = i
				return nil, &c
			}
			return nil, err
		}
		if !ascending || i > 0 && e.ID <= evs[i-1].ID {
			if ascending {
				ascending = false
				seen = make(map[string]int, len(events))
				for j := range i {
					seen[evs[j].ID] = j
				}
			}
			if j, dup := seen[e.ID]; dup {
				return nil, &DuplicateError{Tenant: tenant, EventID: e.ID, Reason: fmt.Sprintf("events %d and %d of one batch share it", j, i)}
			}
			seen[e.ID] = i
		}
		tagged = tagged || len(e.Tags) > 0
		evs[i] = e
	}
	return &appendReq{tenant: tenant, stream: stream, expected: expected, events: evs,
		cond: cond, condAfter: condAfter, tagged: tagged}, nil
}

// prepareEvent fills and validates one event with the store's limits.
//
// On PostgreSQL an event time must be one that unix nanoseconds in an
// int64 hold (1677-09-21 to 2262-04-11): its events table keeps times as
// BIGINT, where a SQLite file keeps a time outside that range as RFC 3339
// text.
func (s *Store) prepareEvent(e *envelope.Event, now time.Time) error {
	if err := e.PrepareLimits(now, envelope.Limits{MaxDataBytes: s.opts.MaxDataBytes, MaxEventBytes: s.opts.MaxEventBytes}); err != nil {
		return err
	}
	if s.onServer() && !timecol.Nanos(e.Time) {
		return &envelope.InvalidError{Index: -1, Field: "time", Reason: fmt.Sprintf("%s is outside 1677-09-21..2262-04-11, the times a store on PostgreSQL keeps (unix nanoseconds): give a time in that range", e.Time.UTC().Format(time.RFC3339Nano))}
	}
	return nil
}

// errRetried is appendLocked's answer to an append that is a retry: its
// AppendResult is the first append's, and the caller rolls back what the
// attempt wrote (the streams row it moved on) and returns that result
// without an error.
var errRetried = errors.New("append is a retry of a stored append")

// bounds returns the versions a stream may have for e to hold. A stream
// that does not exist yet, or was soft-deleted, has version 0 here: the
// expectations that admit 0 (any, no stream) create or revive it.
func (e Expected) bounds() (lo, hi int64) {
	switch e.kind {
	case expectNoStream:
		return 0, 0
	case expectExists:
		return 1, math.MaxInt64
	case expectExact:
		return e.version, e.version
	default:
		return math.MinInt64, math.MaxInt64
	}
}

// appendLocked runs on the writer inside a transaction (or savepoint). On
// error the caller rolls back: it may have written part of the batch. On
// errRetried it rolls back too, and returns the result without error.
//
// It reads once (StreamState: the stream's lifecycle state, its version
// and the last position handed out), checks expected against that, then
// inserts the events at the next positions (no outbox row: the relay
// reads events above its watermark), and the streams row only for a
// stream it creates (or revives after a soft delete). An append to an
// existing stream writes no streams row. The driver keeps the read and
// the writes one atomic step (see driver.Writer.StreamState).
//
// g is nil when the caller opened a savepoint around the append, or
// rolls the whole transaction back when it fails. In a group (runGroup)
// it is the request's scope: the head the group has handed out so far,
// and the request's savepoint, which appendLocked opens itself before a
// write that a failure could leave half done (see openSavepoint).
func (s *Store) appendLocked(a *appendReq, now int64, g *reqScope) (AppendResult, error) {
	w := s.stmts
	n := int64(len(a.events))
	if err := s.checkKeysLive(a); err != nil {
		return AppendResult{}, err
	}
	known := g != nil && g.headKnown
	state, err := w.StreamState(bg, a.tenant, a.stream, !known)
	if err != nil {
		return AppendResult{}, fmt.Errorf("read stream: %w", mapErr(err))
	}
	if known {
		state.LastPosition = g.head
	}
	if res, err := s.refusal(a, state); err != nil {
		return res, err
	}
	current, first, version := state.Version, state.LastPosition+1, state.Version+n
	if g != nil && !g.open && (!state.Row || state.Deleted != 0 || a.tagged || !w.SingleStatementInsert(len(a.events))) {
		// More than one statement writes: a failure between them must
		// undo the first.
		if err := g.openSavepoint(s); err != nil {
			return AppendResult{}, err
		}
	}
	if err := s.insertEvents(a, current, first, now); err != nil {
		if isConstraint(err) {
			res, retry, rerr := s.retryResult(a, current)
			if rerr != nil {
				return AppendResult{}, rerr
			}
			if retry {
				return res, errRetried
			}
		}
		return AppendResult{}, err
	}
	switch {
	case !state.Row:
		if err := w.CreateStream(bg, a.tenant, a.stream, now); err != nil {
			return AppendResult{}, fmt.Errorf("create stream: %w", mapErr(err))
		}
	case state.Deleted == deletedSoft:
		if err := w.ReviveStream(bg, a.tenant, a.stream); err != nil {
			return AppendResult{}, fmt.Errorf("revive stream: %w", mapErr(err))
		}
	}
	for i := range a.events {
		a.events[i].Position = first + int64(i)
	}
	return AppendResult{Tenant: a.tenant, Stream: a.stream, Version: version, Events: a.events}, nil
}

// refusal decides, from the state an append read under the write lock,
// whether the append must not write: the stream was hard-deleted, the
// expected version does not hold, or the stream's version or the log's
// position would pass its range. It answers nil when the append may
// write; errRetried, with the first result, for a retry of a stored
// append that refused so. A check that refuses wrote nothing.
func (s *Store) refusal(a *appendReq, state driver.StreamState) (AppendResult, error) {
	n := int64(len(a.events))
	current, last := state.Version, state.LastPosition
	if state.Deleted == deletedHard {
		return AppendResult{}, fmt.Errorf("tenant %s: it was hard-deleted: %w", a.tenant, ErrStreamDeleted)
	}
	effective := current
	if !state.Row || state.Deleted == deletedSoft {
		effective = 0 // a soft-deleted stream counts as absent
	}
	if lo, hi := a.expected.bounds(); effective < lo || effective > hi {
		// expected does not hold: nothing was written.
		res, retry, err := s.retryResult(a, current)
		if err != nil {
			return AppendResult{}, err
		}
		if retry {
			return res, errRetried
		}
		exp := a.expected
		exp.cond = nil // the error reports the version expected
		return AppendResult{}, &ConflictError{Tenant: a.tenant, Stream: a.stream, Expected: exp, Actual: effective}
	}
	if a.cond != nil {
		// The condition, under the same lock: it sees every commit
		// before this transaction and the requests before this one in
		// it. A retry of a stored append matches its own events: it
		// gets its first result before the condition is looked at.
		m, found, err := s.stmts.FirstMatch(bg, a.tenant, a.cond, a.condAfter)
		if err != nil {
			return AppendResult{}, fmt.Errorf("check the append condition: %w", mapErr(err))
		}
		if found {
			res, retry, err := s.retryResult(a, current)
			if err != nil {
				return AppendResult{}, err
			}
			if retry {
				return res, errRetried
			}
			return AppendResult{}, &ConditionError{Tenant: a.tenant, Stream: a.stream, After: a.condAfter, Position: m.Position, EventID: m.ID}
		}
	}
	if current+n > envelope.MaxStreamVersion {
		return AppendResult{}, &envelope.InvalidError{Index: -1, Field: "streamversion", Reason: fmt.Sprintf("stream %q would pass %d events, the most a stream holds: start a new stream", a.stream, envelope.MaxStreamVersion)}
	}
	if last > envelope.MaxPosition-n {
		// last+n would pass the highest position (and wrap around). A
		// retry of a stored append still gets its first result.
		res, retry, err := s.retryResult(a, current)
		if err != nil {
			return AppendResult{}, err
		}
		if retry {
			return res, errRetried
		}
		return AppendResult{}, &PositionRangeError{Events: int(n), Value: last, Max: envelope.MaxPosition}
	}
	return AppendResult{}, nil
}

// insertEvents inserts a's events as versions current+1... at positions
// first, first+1... The caller read the last position handed out under
// the write lock, so they are the next ones: consecutive, above every
// position ever handed out, and in commit order.
func (s *Store) insertEvents(a *appendReq, current, first, now int64) error {
	for i := range a.events {
		a.events[i].StreamVersion = current + int64(i) + 1
	}
	err := s.stmts.InsertEvents(bg, driver.EventBatch{Tenant: a.tenant, Stream: a.stream, Events: a.events,
		Sealed: a.sealed, FirstPosition: first, RecordedAt: now})
	if err == nil {
		return nil // before errors.As, whose target would escape on every append
	}
	var oe *driver.OpError
	if errors.As(err, &oe) {
		return fmt.Errorf("%s: %w", oe.Op, mapErr(oe.Err))
	}
	return err
}

// retryResult decides whether an append whose ids may already be stored is
// a retry of an earlier append: every id stored, in this stream, with the
// same type and data, in order, as the stream's newest events. It returns
// (first result, true, nil) for a retry, (_, false, nil) when none of the
// ids is stored, and a *DuplicateError for any other reuse.
func (s *Store) retryResult(a *appendReq, current int64) (AppendResult, bool, error) {
	found := 0
	for i := range a.events {
		e := &a.events[i]
		stored, ok, err := s.stmts.EventByID(bg, a.tenant, e.ID)
		if err == nil && !ok {
			if removed, rerr := s.idRemoved(a.tenant, e.ID); rerr != nil {
				return AppendResult{}, false, rerr
			} else if removed {
				return AppendResult{}, false, &DuplicateError{Tenant: a.tenant, EventID: e.ID, Reason: "a scavenge removed the event that had it; an event id is never used twice"}
			}
			if found > 0 {
				return AppendResult{}, false, &DuplicateError{Tenant: a.tenant, EventID: a.events[0].ID, Reason: "only part of this batch is stored: a batch is appended whole or not at all"}
			}
			continue
		}
		if err != nil {
			return AppendResult{}, false, mapErr(err)
		}
		if found < i {
			return AppendResult{}, false, &DuplicateError{Tenant: a.tenant, EventID: e.ID, Reason: "only part of this batch is stored: a batch is appended whole or not at all"}
		}
		found++
		stream, version, typ, data, ext := stored.Stream, stored.Version, stored.Type, stored.Data, stored.Extensions
		switch {
		case stream != a.stream:
			return AppendResult{}, false, &DuplicateError{Tenant: a.tenant, EventID: e.ID, Reason: fmt.Sprintf("it belongs to stream %q", stream)}
		case typ != e.Type || !s.sameStoredData(a, i, data, ext):
			return AppendResult{}, false, &DuplicateError{Tenant: a.tenant, EventID: e.ID, Reason: "the stored event has a different type or data"}
		}
		want := current - int64(len(a.events)) + int64(i) + 1
		if version != want {
			return AppendResult{}, false, &DuplicateError{Tenant: a.tenant, EventID: e.ID, Reason: fmt.Sprintf("it is version %d of the stream, not among its newest events", version)}
		}
	}
	if found == 0 {
		return AppendResult{}, false, nil
	}
	evs, err := s.newestEvents(a.tenant, a.stream, current, len(a.events))
	if err != nil {
		return AppendResult{}, false, err
	}
	s.log.Debug("append is a retry; returning the first result", "tenant", a.tenant, "stream", a.stream, "version", current)
	return AppendResult{Tenant: a.tenant, Stream: a.stream, Version: current, Events: evs, Replayed: true}, true, nil
}

// newestEvents reads the newest n events of a stream whose version is
// current, on the writer's connection (it sees the open transaction).
func (s *Store) newestEvents(tenant, stream string, current int64, n int) ([]envelope.Event, error) {
	out, err := s.ex.NewestEvents(bg, s.wconn, tenant, stream, current-int64(n), n)
	if err != nil {
		return nil, err
	}
	return out, s.keys.openEvents(bg, s.wconn, false, out)
}
