package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/hostguard"
	"github.com/eventlite/eventlite/store"
)

// ProblemTypeBase is the prefix of every problem's type URI: the anchors
// of docs/http.md, one per problem name.
const ProblemTypeBase = "https://github.com/eventlite/eventlite/blob/main/docs/http.md#"

// problemKinds are the problem names, their statuses and titles.
var problemKinds = map[string]struct {
	status int
	title  string
}{
	"invalid-event":             {400, "The event is invalid"},
	"invalid-stream-id":         {400, "The stream id is invalid"},
	"invalid-tenant":            {400, "The tenant is invalid"},
	"subject-mismatch":          {400, "The event's subject is not the stream appended to"},
	"invalid-precondition":      {400, "The precondition header is malformed"},
	"invalid-parameter":         {400, "A query parameter is invalid"},
	"invalid-idempotency-key":   {400, "The Idempotency-Key is invalid"},
	"invalid-body":              {400, "The request body is malformed"},
	"unauthorized":              {401, "A valid bearer token is needed"},
	"tenant-forbidden":          {403, "The token does not give access to this tenant"},
	"read-only":                 {403, "The token is read-only"},
	"cross-site":                {403, "The request did not come from this server's own page"},
	hostguard.Problem:           {hostguard.Status, hostguard.Title},
	"not-found":                 {404, "No such resource"},
	"stream-not-found":          {404, "The stream does not exist"},
	"event-not-found":           {404, "The event does not exist"},
	"dead-letter-not-found":     {404, "The dead letter does not exist"},
	"effect-not-found":          {404, "The effect does not exist"},
	"quarantine-not-found":      {404, "No such projection, consumer or open quarantine entry"},
	"method-not-allowed":        {405, "The method is not allowed here"},
	"request-timeout":           {408, "The request body arrived too slowly"},
	"stream-deleted":            {410, "The stream was hard-deleted"},
	"duplicate-event-id":        {409, "The event id is already used"},
	"idempotency-key-in-flight": {409, "A request with this Idempotency-Key is in progress"},
	"args-hash-mismatch":        {409, "The args_hash is not the hash of the effect's arguments"},
	"effect-state":              {409, "The effect's state does not allow this decision"},
	"version-conflict":          {412, "The stream is not at the expected version"},
	"condition-failed":          {409, "An event matching the append condition was appended after its position"},
	"too-large":                 {413, "The request or an event is too large"},
	"unsupported-media-type":    {415, "The Content-Type is not supported"},
	"idempotency-key-mismatch":  {422, "The Idempotency-Key was used for another request"},
	"too-many-failures":         {429, "Too many failed authentications from this address"},
	"internal":                  {500, "Internal error"},
	"busy":                      {503, "The database is busy"},
}

// Problem is an RFC 9457 problem detail, as the server writes it with
// Content-Type application/problem+json.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Tenant   string `json:"tenant,omitempty"`
	Stream   string `json:"stream,omitempty"`
	Field    string `json:"field,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Expected any    `json:"expected,omitempty"`
	Actual   *int64 `json:"actual,omitempty"`
	Limit    *int64 `json:"limit,omitempty"`
	Index    *int   `json:"index,omitempty"`
	State    string `json:"state,omitempty"` // an effect's state, on effect-state
	// Position and EventID name the first event that failed an append
	// condition, on condition-failed; After is the condition's position.
	Position *int64 `json:"position,omitempty,string"`
	EventID  string `json:"event_id,omitempty"`
	After    *int64 `json:"after,omitempty,string"`

	header http.Header // extra response headers
}

// Name is the problem's name: the anchor of its type URI.
func (p *Problem) Name() string { return p.Type[len(ProblemTypeBase):] }

func (p *Problem) Error() string { return p.Name() + ": " + p.Detail }

func newProblem(name, detail string) *Problem {
	k, ok := problemKinds[name]
	if !ok {
		panic("serve: unknown problem " + name)
	}
	return &Problem{Type: ProblemTypeBase + name, Title: k.title, Status: k.status, Detail: detail}
}

func problemf(name, format string, args ...any) *Problem {
	return newProblem(name, fmt.Sprintf(format, args...))
}

func (p *Problem) with(key, value string) *Problem {
	if p.header == nil {
		p.header = http.Header{}
	}
	p.header.Set(key, value)
	return p
}

func ptr[T any](v T) *T { return &v }

func writeProblem(w http.ResponseWriter, p *Problem) {
	for k, v := range p.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Del("Content-Length")
	w.WriteHeader(p.Status)
	b, _ := json.Marshal(p)
	_, _ = w.Write(append(b, '\n'))
}

// problemFor maps a store or envelope error to its problem; index maps a
// duplicate event id to its place in the request (-1: unknown).
func problemFor(err error, tenant, stream string, index func(id string) int) *Problem {
	var (
		pe  *Problem
		cde *store.ConditionError
		ce  *store.ConflictError
		de  *store.DuplicateError
		te  *envelope.TooLargeError
		ie  *envelope.InvalidError
	)
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &cde):
		p := problemf("condition-failed", "event %q at position %d matches the append condition after position %d: read the events matching the query again, decide again, and retry with the condition's position after %d",
			cde.EventID, cde.Position, cde.After, cde.Position)
		p.Tenant, p.Stream, p.Position, p.EventID, p.After = cde.Tenant, cde.Stream, ptr(cde.Position), cde.EventID, ptr(cde.After)
		return p
	case errors.As(err, &ce):
		p := problemf("version-conflict", "stream %q is at version %d, not at %s: read it, decide again and retry with If-Match: %s",
			ce.Stream, ce.Actual, ce.Expected, etag(ce.Actual))
		p.Tenant, p.Stream, p.Actual = ce.Tenant, ce.Stream, ptr(ce.Actual)
		p.Expected = expectedJSON(ce.Expected)
		if ce.Actual == 0 {
			return p // a stream that does not exist (or was deleted) has no ETag
		}
		return p.with("ETag", etag(ce.Actual))
	case errors.As(err, &de):
		p := problemf("duplicate-event-id", "%v: give the event a new id (a retry must send the same events as the first request)", de)
		p.Tenant, p.Stream, p.Field, p.Reason = tenant, stream, "id", de.Reason
		if index != nil {
			if i := index(de.EventID); i >= 0 {
				p.Index = ptr(i)
			}
		}
		return p
	case errors.As(err, &te):
		p := problemf("too-large", "%v", te)
		p.Tenant, p.Stream, p.Field, p.Limit = tenant, stream, te.Field, ptr(int64(te.Limit))
		if te.Index >= 0 {
			p.Index = ptr(te.Index)
		}
		return p
	case errors.As(err, &ie):
		p := problemf("invalid-event", "%v", ie)
		p.Tenant, p.Stream, p.Field, p.Reason = tenant, stream, ie.Field, ie.Reason
		if ie.Index >= 0 {
			p.Index = ptr(ie.Index)
		}
		return p
	case errors.Is(err, store.ErrMasterKey):
		// An erasurekey without the server's master key (or one that does
		// not unwrap the subject's key): never stored in clear.
		p := problemf("invalid-event", "%v", err)
		p.Tenant, p.Stream, p.Field = tenant, stream, store.ExtErasureKey
		return p
	case errors.Is(err, store.ErrInvalidEvent), errors.Is(err, store.ErrIdempotencyMismatch):
		p := problemf("invalid-event", "%v", err)
		p.Tenant, p.Stream = tenant, stream
		return p
	case errors.Is(err, store.ErrStreamDeleted):
		p := problemf("stream-deleted", "stream %q of tenant %q was hard-deleted: it is never written or read again; use another stream id", stream, tenant)
		p.Tenant, p.Stream = tenant, stream
		return p
	case errors.Is(err, store.ErrBusy):
		return problemf("busy", "%v: retry", err).with("Retry-After", "1")
	case errors.Is(err, store.ErrClosed):
		return problemf("busy", "%v: the server is stopping; retry against its successor", err).with("Retry-After", "1")
	}
	return problemf("internal", "%v", err)
}

// expectedJSON is the problem's "expected": a version number, "no-stream"
// or "exists".
func expectedJSON(e store.Expected) any {
	if v, ok := e.Version(); ok {
		return v
	}
	switch e {
	case store.NoStream:
		return "no-stream"
	case store.StreamExists:
		return "exists"
	}
	return "any"
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }
