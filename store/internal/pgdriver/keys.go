package pgdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// erasureKeyOf is the erasurekey extension of an events row (e), NULL
// for none. Extensions are JSON written by the store, whose string
// values hold no control character, so the cast never fails on a NUL.
const erasureKeyOf = `(e.extensions::json ->> 'erasurekey')`

// copyColumns is the column that holds the copy, per kind (the kind is
// the table).
var copyColumns = map[driver.CopyKind]string{
	driver.CopiesQuarantine:       "event",
	driver.CopiesDeferred:         "event",
	driver.CopiesVersionConflicts: "conflicting_event",
}

// EraseCopies rewrites the copies in Go, not with PostgreSQL's JSON
// functions: a copy's data is the event's own JSON, which may hold an
// escaped NUL (\u0000) that json and jsonb refuse, and a copy that is not
// JSON is left alone (as SQLite's json_valid guard does) instead of
// failing the forget. It locks the tenant's copies it reads (FOR UPDATE),
// so that each is rewritten from its current bytes.
func (Exec) EraseCopies(ctx context.Context, q driver.Querier, kind driver.CopyKind, tenant, subject string) (int64, error) {
	col, ok := copyColumns[kind]
	if !ok {
		return 0, fmt.Errorf("no copies of events kept as %q", kind)
	}
	table := QuoteIdent(string(kind))
	rows, err := q.QueryContext(ctx, `SELECT ctid::text, `+col+` FROM `+table+`
		WHERE tenant = $1 AND `+col+` IS NOT NULL FOR UPDATE`, tenant)
	if err != nil {
		return 0, err
	}
	type change struct {
		ctid string
		copy []byte
	}
	var changes []change
	for rows.Next() {
		var c change
		var b []byte
		if err := rows.Scan(&c.ctid, &b); err != nil {
			rows.Close()
			return 0, err
		}
		if c.copy, ok = eraseCopy(b, subject); ok {
			changes = append(changes, c)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	set := ``
	if kind == driver.CopiesQuarantine {
		// The error text may have quoted the data.
		set = `, error = CASE WHEN error = '' THEN error ELSE $3 END`
	}
	for _, c := range changes {
		args := []any{c.copy, c.ctid}
		if set != "" {
			args = append(args, driver.ErasedError)
		}
		if _, err := q.ExecContext(ctx, `UPDATE `+table+` SET `+col+` = $1`+set+` WHERE ctid = $2::tid`, args...); err != nil {
			return 0, err
		}
	}
	return int64(len(changes)), nil
}

// eraseCopy returns the structured-JSON event copy b without its data
// (data and data_base64 removed) and its tags (the eventlitetags
// extension), marked dataerased: true, when b is a
// JSON object whose erasurekey is subject. The other members keep their
// order and bytes; dataerased takes the place of an earlier one, or
// comes last.
func eraseCopy(b []byte, subject string) ([]byte, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out bytes.Buffer
	out.WriteByte('{')
	matched, erased := false, false
	member := func(key []byte, value []byte) {
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.Write(key)
		out.WriteByte(':')
		out.Write(value)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		key, err := marshalKey(name)
		if err != nil {
			return nil, false
		}
		switch name {
		case "data", "data_base64", envelope.ExtTags:
			continue
		case "dataerased":
			if !erased {
				member(key, []byte("true"))
				erased = true
			}
			continue
		case "erasurekey":
			var s string
			matched = json.Unmarshal(v, &s) == nil && s == subject
		}
		member(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF || !matched {
		return nil, false
	}
	if !erased {
		member([]byte(`"dataerased"`), []byte("true"))
	}
	out.WriteByte('}')
	return out.Bytes(), true
}

// marshalKey writes a member name as JSON without HTML escaping.
func marshalKey(name string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(name); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
