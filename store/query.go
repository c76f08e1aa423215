package store

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Query selects a tenant's events by type and tag, as the Dynamic
// Consistency Boundary specification (dcb.events) defines it. The zero
// Query selects every event. Otherwise an event matches the query when
// it matches any of its items; see QueryItem. Events that are no longer
// readable (before a truncate, of a deleted stream, removed by a
// scavenge) match no query, and neither do the tags of an event whose
// subject was forgotten (they are erased with its data).
//
// A query reads by tags through the tag index: a read of one tag that
// matches 100 events costs about what a read of a 100-event stream
// costs, however long the log. An item of types only reads the tenant's
// log from the position on.
type Query struct {
	Items []QueryItem
}

// QueryItem matches an event whose type is one of Types (when Types is
// not empty) and that carries every tag of Tags. An item names types,
// tags or both, never neither.
type QueryItem struct {
	Types []string
	Tags  []string
}

// Limits of a query.
const (
	// maxQueryItems is the most items a Query holds.
	maxQueryItems = 32
	// maxQueryTerms is the most types, and the most tags, one item names.
	maxQueryTerms = 32
)

// All reports whether q is the zero Query, which selects every event.
func (q Query) All() bool { return len(q.Items) == 0 }

// Matches reports whether e matches q. It judges e as given: whether e
// is still readable in a store is not its concern.
func (q Query) Matches(e envelope.Event) bool {
	if q.All() {
		return true
	}
	for _, it := range q.Items {
		if it.matches(&e) {
			return true
		}
	}
	return false
}

func (it QueryItem) matches(e *envelope.Event) bool {
	if len(it.Types) > 0 {
		found := false
		for _, t := range it.Types {
			if t == e.Type {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, t := range it.Tags {
		if !e.HasTag(t) {
			return false
		}
	}
	return true
}

// Validate checks q: at most maxQueryItems items, each naming types,
// tags or both (at most maxQueryTerms of each), every tag valid
// (envelope.ValidateTag) and every type a non-empty attribute string.
// The error is an *envelope.InvalidError whose Field is "query".
func (q Query) Validate() error {
	if len(q.Items) > maxQueryItems {
		return queryInvalid("%d items, more than %d", len(q.Items), maxQueryItems)
	}
	for i, it := range q.Items {
		if len(it.Types) == 0 && len(it.Tags) == 0 {
			return queryInvalid("item %d names neither types nor tags: an item names types, tags or both (the zero Query selects every event)", i)
		}
		if len(it.Types) > maxQueryTerms || len(it.Tags) > maxQueryTerms {
			return queryInvalid("item %d names more than %d types or tags", i, maxQueryTerms)
		}
		for _, t := range it.Types {
			if err := envelope.ValidateText("type", t, true); err != nil {
				return queryInvalid("item %d: type %s: %v", i, strconv.Quote(t), err)
			}
		}
		for _, t := range it.Tags {
			if err := envelope.ValidateTag(t); err != nil {
				return queryInvalid("item %d: %v", i, err)
			}
		}
	}
	return nil
}

func queryInvalid(format string, args ...any) error {
	return &envelope.InvalidError{Index: -1, Field: "query", Reason: fmt.Sprintf(format, args...)}
}

// driverQuery is q for the driver; the zero Query is one item that
// matches every event.
func (q Query) driverQuery() *driver.Query {
	if q.All() {
		return &driver.Query{Items: []driver.QueryItem{{}}}
	}
	dq := &driver.Query{Items: make([]driver.QueryItem, len(q.Items))}
	for i, it := range q.Items {
		dq.Items[i] = driver.QueryItem{Types: it.Types, Tags: it.Tags}
	}
	return dq
}

// Condition is an append condition: the append fails when an event of
// its tenant matching Query has a position after After (After 0: when
// any event matches at all). A decision reads the events matching a
// query, notes the position it read up to (the last matching event's, or
// the head's when none matched), decides, and appends with that
// condition: nothing relevant happened in between.
type Condition struct {
	Query Query
	After int64
}

// If returns e with the append condition c: the append succeeds when e
// holds and c holds, checked in the append's transaction under the
// writer's lock before its events are inserted. When e fails, the
// append returns the *ConflictError (e is checked first); when c fails,
// a *ConditionError. A retry of a stored append returns its first result
// before c is looked at. In an Update, a condition sees the appends made
// before it in the same transaction (and, in a group commit, the
// requests before it): put it on the first append of a decision that
// writes to several streams.
func (e Expected) If(c Condition) Expected {
	e.cond = &c
	return e
}

// ErrConditionFailed is matched by a *ConditionError.
var ErrConditionFailed = errors.New("append condition failed")

// ConditionError is an append whose condition failed: an event matching
// the condition's query was appended after its position. The append
// wrote nothing. errors.Is(err, ErrConditionFailed) and errors.Is(err,
// ErrConflict) hold for it (a decision retries on either).
type ConditionError struct {
	Tenant, Stream string
	After          int64 // the condition's position
	// Position and EventID name the first event after After that
	// matches the query.
	Position int64
	EventID  string
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("append to %q (tenant %s): condition failed: event %q at position %d matches the query after position %d: read again and decide anew",
		e.Stream, e.Tenant, e.EventID, e.Position, e.After)
}

// Unwrap lets errors.Is match ErrConditionFailed and ErrConflict.
func (e *ConditionError) Unwrap() []error { return []error{ErrConditionFailed, ErrConflict} }
