package sqlitedriver

import (
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// SelectEvents reads the columns of events that EventScanner scans.
const SelectEvents = `SELECT position, tenant, stream_id, version, event_id, type, source, time,
	content_type, data, ` + SelectAttrs + ` FROM events`

// SelectAttrs reads the four attributes most events leave empty
// (dataschema, correlationid, causationid and the other extensions),
// which the events table keeps in one column, attrs: NULL when all four
// are empty, else the four joined by NUL bytes (extensions: their JSON
// object, or nothing). Every column a write binds and a read fetches
// costs the driver a lock of the connection and a conversion. A NUL
// separates them unambiguously: envelope refuses control characters in
// string attributes, and the extensions' JSON escapes them.
const SelectAttrs = `attrs`

// attrPart is SQL for part k (0-3) of the attrs column, as TEXT: the
// dataschema, correlationid and causationid are empty text (as their
// columns were before they were joined), the extensions NULL. attrs is a
// BLOB so that instr and substr count bytes: on TEXT they stop at a NUL.
func attrPart(k int) string {
	rest := "attrs"
	for range k {
		rest = "substr(" + rest + ", instr(" + rest + ", x'00') + 1)"
	}
	if k == 3 {
		return "CASE WHEN length(" + rest + ") > 0 THEN CAST(" + rest + " AS TEXT) END"
	}
	return "COALESCE(CAST(substr(" + rest + ", 1, instr(" + rest + ", x'00') - 1) AS TEXT), '')"
}

// The attributes' columns before they were joined into attrs, as SQL
// over it, for the rare statements that look into them.
var (
	DataSchemaSQL    = attrPart(0)
	CorrelationIDSQL = attrPart(1)
	CausationIDSQL   = attrPart(2)
	ExtensionsSQL    = attrPart(3)
)

// SelectStreamEvents is SelectEvents without the tenant and stream
// columns, for reads of one stream, which know them: two strings fewer
// to copy out of SQLite and allocate per row.
const SelectStreamEvents = `SELECT position, version, event_id, type, source, time,
	content_type, data, ` + SelectAttrs + ` FROM events`

// Scanner is what a row or rows scan from.
type Scanner = sqlshared.Scanner

// EventScanner scans rows of SelectEvents (or SelectStreamEvents) into
// events. It builds its list of destinations once, for every row of a
// query: a Scan with a new list of pointers into a new event allocates
// both on every row.
type EventScanner struct {
	e     envelope.Event
	t     timecol.Time
	attrs []byte // SelectAttrs
	dest  []any
	// tenant and stream, when known, fill the events of
	// SelectStreamEvents, which does not read them.
	known          bool
	tenant, stream string
}

// NewEventScanner scans rows of SelectEvents.
func NewEventScanner() *EventScanner {
	s := &EventScanner{}
	e := &s.e
	s.dest = []any{&e.Position, &e.Tenant, &e.Stream, &e.StreamVersion, &e.ID, &e.Type, &e.Source, &s.t,
		&e.DataContentType, &e.Data, &s.attrs}
	return s
}

// NewStreamEventScanner scans rows of SelectStreamEvents of one stream.
func NewStreamEventScanner(tenant, stream string) *EventScanner {
	s := &EventScanner{known: true, tenant: tenant, stream: stream}
	e := &s.e
	s.dest = []any{&e.Position, &e.StreamVersion, &e.ID, &e.Type, &e.Source, &s.t,
		&e.DataContentType, &e.Data, &s.attrs}
	return s
}

// Scan scans one row.
func (s *EventScanner) Scan(r Scanner) (envelope.Event, error) {
	s.e, s.attrs = envelope.Event{}, nil
	if err := r.Scan(s.dest...); err != nil {
		return envelope.Event{}, err
	}
	e := s.e
	if s.known {
		e.Tenant, e.Stream = s.tenant, s.stream
	}
	e.Time, e.TimeSet = s.t.T, s.t.T.IsZero()
	if s.attrs != nil {
		if err := SplitAttrs(s.attrs, &e); err != nil {
			return e, fmt.Errorf("event at position %d: %w", e.Position, err)
		}
	}
	return e, nil
}

// JoinAttrs is e's attrs column: nil (NULL) when its dataschema,
// correlationid, causationid and other extensions are all empty.
func JoinAttrs(e *envelope.Event) ([]byte, error) {
	if e.DataSchema == "" && e.CorrelationID == "" && e.CausationID == "" && len(e.Extensions) == 0 && len(e.Tags) == 0 {
		return nil, nil
	}
	ext, err := driver.ExtensionsJSON(e)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(e.DataSchema)+len(e.CorrelationID)+len(e.CausationID)+len(ext)+3)
	b = append(b, e.DataSchema...)
	b = append(b, 0)
	b = append(b, e.CorrelationID...)
	b = append(b, 0)
	b = append(b, e.CausationID...)
	b = append(b, 0)
	return append(b, ext...), nil
}

// attrFields splits a non-NULL attrs column into its four fields,
// substrings of s.
func attrFields(s string) ([4]string, error) {
	var f [4]string
	n := 0
	for n < 3 {
		i := strings.IndexByte(s, 0)
		if i < 0 {
			break
		}
		f[n], s = s[:i], s[i+1:]
		n++
	}
	f[n] = s
	if n != 3 {
		return f, fmt.Errorf("attributes column has %d parts, want 4", n+1)
	}
	return f, nil
}

// SplitAttrs fills e's dataschema, correlationid, causationid and other
// extensions from a non-NULL SelectAttrs column.
func SplitAttrs(b []byte, e *envelope.Event) error { return splitAttrs(string(b), e) }

// splitAttrs is SplitAttrs on a string, whose fields it keeps as
// substrings.
func splitAttrs(s string, e *envelope.Event) error {
	f, err := attrFields(s)
	if err != nil {
		return err
	}
	e.DataSchema, e.CorrelationID, e.CausationID = f[0], f[1], f[2]
	if len(f[3]) > 0 {
		if err := sqlshared.DecodeExtensions([]byte(f[3]), e); err != nil {
			return fmt.Errorf("extensions: %w", err)
		}
	}
	return nil
}
