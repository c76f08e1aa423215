package pgdriver

import (
	"database/sql"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// SelectEvents reads the columns of events that EventScanner scans.
// PostgreSQL's text holds no NUL byte, so the four attributes most events
// leave empty are four columns here (SQLite's driver joins them into one).
const SelectEvents = `SELECT position, tenant, stream_id, version, event_id, type, source, time,
	content_type, data, data_schema, correlation_id, causation_id, extensions FROM events`

// SelectStreamEvents is SelectEvents without the tenant and stream
// columns, for reads of one stream, which know them.
const SelectStreamEvents = `SELECT position, version, event_id, type, source, time,
	content_type, data, data_schema, correlation_id, causation_id, extensions FROM events`

// Scanner is what a row or rows scan from.
type Scanner = sqlshared.Scanner

// EventScanner scans rows of SelectEvents (or SelectStreamEvents) into
// events, with one list of destinations for every row of a query.
type EventScanner struct {
	e    envelope.Event
	t    timecol.Time
	ext  sql.NullString
	dest []any
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
		&e.DataContentType, &e.Data, &e.DataSchema, &e.CorrelationID, &e.CausationID, &s.ext}
	return s
}

// NewStreamEventScanner scans rows of SelectStreamEvents of one stream.
func NewStreamEventScanner(tenant, stream string) *EventScanner {
	s := &EventScanner{known: true, tenant: tenant, stream: stream}
	e := &s.e
	s.dest = []any{&e.Position, &e.StreamVersion, &e.ID, &e.Type, &e.Source, &s.t,
		&e.DataContentType, &e.Data, &e.DataSchema, &e.CorrelationID, &e.CausationID, &s.ext}
	return s
}

// Scan scans one row.
func (s *EventScanner) Scan(r Scanner) (envelope.Event, error) {
	s.e, s.ext = envelope.Event{}, sql.NullString{}
	if err := r.Scan(s.dest...); err != nil {
		return envelope.Event{}, err
	}
	e := s.e
	if s.known {
		e.Tenant, e.Stream = s.tenant, s.stream
	}
	e.Time, e.TimeSet = s.t.T, s.t.T.IsZero()
	if s.ext.Valid && s.ext.String != "" {
		if err := sqlshared.DecodeExtensions([]byte(s.ext.String), &e); err != nil {
			return e, fmt.Errorf("event at position %d: extensions: %w", e.Position, err)
		}
	}
	return e, nil
}
