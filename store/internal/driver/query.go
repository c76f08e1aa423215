package driver

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/eventlite/eventlite/envelope"
)

// Query selects a tenant's events by type and tag: an event matches when
// it matches any item. The store validated it (every item names types,
// tags or both).
type Query struct {
	Items []QueryItem
}

// QueryItem matches an event whose type is one of Types (any type when
// Types is empty) and that carries every tag of Tags.
type QueryItem struct {
	Types []string
	Tags  []string
}

// Match is the first event a condition found.
type Match struct {
	Position int64
	ID       string
}

// Tags are indexed in the table event_tags (tenant, tag, position), one
// row per tag of a stored event, primary key in that order: a query's
// item with tags walks the rows of its first tag from a position on, in
// position order, and looks its other tags up by the same key. The tags
// themselves are stored with the event, in its extensions, as the
// envelope.ExtTags extension (the CloudEvents form); the table is their
// index, written in the append's transaction.

// placeholders writes a statement's parameters: ? on SQLite, $n on
// PostgreSQL.
type placeholders struct {
	pg   bool
	args []any
	// base is the number of the statement's parameters before these.
	base int
}

func (p *placeholders) add(v any) string {
	p.args = append(p.args, v)
	if p.pg {
		return "$" + strconv.Itoa(p.base+len(p.args))
	}
	return "?"
}

// readable is SQL that holds when the event e is readable: at or after
// its stream's first retained version (a truncate moves it; a delete
// moves it past the tombstone). A scavenge removes events and their tag
// rows.
const readable = `e.version >= COALESCE((SELECT s.first_version FROM streams s WHERE s.tenant = e.tenant AND s.stream_id = e.stream_id), 1)`

// matchPositions is SQL for the positions of the tenant's readable events
// that match q, from position from (inclusive; down to it with backward),
// in position order, at most n of them.
func matchPositions(p *placeholders, tenant string, q *Query, from int64, backward bool, n int) string {
	cmp, order := ">=", ""
	if backward {
		cmp, order = "<=", " DESC"
	}
	var b strings.Builder
	for i, it := range q.Items {
		if i > 0 {
			b.WriteString(" UNION ")
		}
		b.WriteString("SELECT position FROM (")
		if len(it.Tags) > 0 {
			b.WriteString("SELECT t0.position AS position FROM event_tags t0 JOIN events e ON e.position = t0.position WHERE t0.tenant = ")
			b.WriteString(p.add(tenant))
			b.WriteString(" AND t0.tag = ")
			b.WriteString(p.add(it.Tags[0]))
			b.WriteString(" AND t0.position " + cmp + " ")
			b.WriteString(p.add(from))
			for k, tag := range it.Tags[1:] {
				t := "t" + strconv.Itoa(k+1)
				b.WriteString(" AND EXISTS (SELECT 1 FROM event_tags " + t + " WHERE " + t + ".tenant = t0.tenant AND " + t + ".tag = ")
				b.WriteString(p.add(tag))
				b.WriteString(" AND " + t + ".position = t0.position)")
			}
		} else {
			b.WriteString("SELECT e.position AS position FROM events e WHERE e.position " + cmp + " ")
			b.WriteString(p.add(from))
			// On SQLite the unary + keeps the planner off the (tenant,
			// event_id) index, which would read the tenant's whole log
			// and sort it: the position range comes first.
			if p.pg {
				b.WriteString(" AND e.tenant = ")
			} else {
				b.WriteString(" AND +e.tenant = ")
			}
			b.WriteString(p.add(tenant))
		}
		if len(it.Types) > 0 {
			b.WriteString(" AND e.type IN (")
			for k, typ := range it.Types {
				if k > 0 {
					b.WriteString(", ")
				}
				b.WriteString(p.add(typ))
			}
			b.WriteString(")")
		}
		b.WriteString(" AND " + readable)
		if len(it.Tags) > 0 {
			b.WriteString(" ORDER BY t0.position" + order)
		} else {
			b.WriteString(" ORDER BY e.position" + order)
		}
		b.WriteString(" LIMIT ")
		b.WriteString(p.add(int64(n)))
		b.WriteString(") q" + strconv.Itoa(i))
	}
	b.WriteString(" ORDER BY 1" + order + " LIMIT ")
	b.WriteString(p.add(int64(n)))
	return b.String()
}

// QueryRead is the read of the log by f.Query: sel (the engine's select
// of event columns FROM events, without a WHERE) of the events matching
// it from position from, n at most, in position order (or down with
// f.Backward). pg numbers its parameters $1...
func QueryRead(pg bool, sel string, f *LogFilter, from int64, n int) (string, []any) {
	p := &placeholders{pg: pg}
	inner := matchPositions(p, f.Tenant, f.Query, from, f.Backward, n)
	order := " ORDER BY position LIMIT "
	if f.Backward {
		order = " ORDER BY position DESC LIMIT "
	}
	q := sel + " WHERE position IN (" + inner + ")" + order
	q += p.add(int64(n))
	return q, p.args
}

// FirstMatchSQL is the statement a condition runs: the position and id
// of the tenant's first readable event after position after that
// matches q, no row when none does.
func FirstMatchSQL(pg bool, tenant string, q *Query, after int64) (string, []any) {
	p := &placeholders{pg: pg}
	inner := matchPositions(p, tenant, q, after+1, false, 1)
	return "SELECT position, event_id FROM events WHERE position = (" + inner + ")", p.args
}

// MatchAfterSQL is SQL that holds when a readable event of the tenant
// after position after matches q, for a PostgreSQL statement that has
// base parameters before these ($base+1...): a condition inside a
// statement of its own (pgdriver's decided append).
func MatchAfterSQL(base int, tenant string, q *Query, after int64) (string, []any) {
	p := &placeholders{pg: true, base: base}
	inner := matchPositions(p, tenant, q, after+1, false, 1)
	return "EXISTS (" + inner + ")", p.args
}

// TagRows lists the tag rows of a batch: for each event with tags, its
// position and each tag.
func TagRows(b EventBatch, fn func(position int64, tag string)) {
	for i := range b.Events {
		for _, t := range b.Events[i].Tags {
			fn(b.FirstPosition+int64(i), t)
		}
	}
}

// BatchHasTags reports whether an event of the batch has tags.
func BatchHasTags(events []envelope.Event) bool {
	for i := range events {
		if len(events[i].Tags) > 0 {
			return true
		}
	}
	return false
}

// ExtensionsJSON is the stored form of e's extensions: their JSON object
// with the tags as the envelope.ExtTags extension (envelope.EncodeTags),
// nil when e has neither.
func ExtensionsJSON(e *envelope.Event) ([]byte, error) {
	if len(e.Tags) == 0 {
		if len(e.Extensions) == 0 {
			return nil, nil
		}
		return json.Marshal(e.Extensions)
	}
	tags, err := json.Marshal(envelope.EncodeTags(e.Tags))
	if err != nil {
		return nil, err
	}
	if len(e.Extensions) == 0 {
		b := make([]byte, 0, len(envelope.ExtTags)+len(tags)+4)
		b = append(b, `{"`+envelope.ExtTags+`":`...)
		b = append(b, tags...)
		return append(b, '}'), nil
	}
	x, err := json.Marshal(e.Extensions)
	if err != nil {
		return nil, err
	}
	// x is {...}: the tags go first, the other members keep their order.
	b := make([]byte, 0, len(x)+len(envelope.ExtTags)+len(tags)+5)
	b = append(b, `{"`+envelope.ExtTags+`":`...)
	b = append(b, tags...)
	b = append(b, ',')
	return append(b, x[1:]...), nil
}

// LiftTags moves the stored envelope.ExtTags extension of an event read
// back into its Tags. A value that does not decode as tags (stored by a
// version of eventlite before tags, as a free extension) stays an
// extension: doctor reports it, and no query matches it.
func LiftTags(e *envelope.Event) {
	v, ok := e.Extensions[envelope.ExtTags].(string)
	if !ok {
		return
	}
	tags, err := envelope.DecodeTags(v)
	if err != nil {
		return
	}
	e.Tags = tags
	delete(e.Extensions, envelope.ExtTags)
	if len(e.Extensions) == 0 {
		e.Extensions = nil
	}
}

// EachTagRow calls fn for every row of event_tags, in position order. It
// returns nil at once on a database without the table (an older schema).
func EachTagRow(ctx context.Context, q ReadQuerier, fn func(tenant string, position int64, tag string) error) error {
	rows, err := q.QueryContext(ctx, `SELECT tenant, position, tag FROM event_tags ORDER BY position, tag`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tenant, tag string
		var pos int64
		if err := rows.Scan(&tenant, &pos, &tag); err != nil {
			return err
		}
		if err := fn(tenant, pos, tag); err != nil {
			return err
		}
	}
	return rows.Err()
}

// StripTags returns the stored extensions ext without the
// envelope.ExtTags extension (nil when nothing is left), and the tags it
// held (none when its value does not decode: no index rows exist for
// it). ok is false when ext holds no such extension.
func StripTags(ext []byte) (out []byte, tags []string, ok bool, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(ext, &m); err != nil {
		return nil, nil, false, err
	}
	raw, ok := m[envelope.ExtTags]
	if !ok {
		return ext, nil, false, nil
	}
	var v string
	if json.Unmarshal(raw, &v) == nil {
		tags, _ = envelope.DecodeTags(v)
	}
	delete(m, envelope.ExtTags)
	if len(m) == 0 {
		return nil, tags, true, nil
	}
	out, err = json.Marshal(m)
	return out, tags, true, err
}

// DeleteTagRowsOf deletes the index rows of the events that sel selects
// as (tenant, position, stored eventlitetags value): a value that does
// not decode has no rows. pg numbers the DELETE's parameters $1...
func DeleteTagRowsOf(ctx context.Context, q Querier, pg bool, sel string, args ...any) error {
	rows, err := q.QueryContext(ctx, sel, args...)
	if err != nil {
		return err
	}
	type row struct {
		tenant string
		pos    int64
		tags   []string
	}
	var del []row
	for rows.Next() {
		var r row
		var v string
		if err := rows.Scan(&r.tenant, &r.pos, &v); err != nil {
			rows.Close()
			return err
		}
		if r.tags, err = envelope.DecodeTags(v); err == nil && len(r.tags) > 0 {
			del = append(del, r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	query := `DELETE FROM event_tags WHERE tenant = ? AND tag = ? AND position = ?`
	if pg {
		query = `DELETE FROM event_tags WHERE tenant = $1 AND tag = $2 AND position = $3`
	}
	for _, r := range del {
		for _, t := range r.tags {
			if _, err := q.ExecContext(ctx, query, r.tenant, t, r.pos); err != nil {
				return err
			}
		}
	}
	return nil
}
