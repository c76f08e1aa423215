package sqlitedriver

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// A packed read fetches each event as ONE text column instead of eleven.
// The driver pays for every column of every row (a type lookup, a value
// read and a length read, each a call into SQLite under the connection's
// mutex, and a Go allocation for each value), and that, not SQLite's
// walk of the table, is most of what a read of the log costs. One column
// built by concat_ws() inside SQLite costs less than two columns.
//
// The column holds, separated by the byte 0xFF:
//
//	position, version, time, octet_length(data) (-1: NULL),
//	[tenant, stream_id,] event_id, type, source, content_type,
//	attributes (SelectAttrs; empty: NULL), data (left out when NULL)
//
// 0xFF never occurs in valid UTF-8, and every string attribute is valid
// UTF-8 (envelope refuses anything else). Data, which may hold any byte,
// comes last, and its length, given before it, separates it from the
// rest, which must then split into exactly its fields. A row that does
// not decode exactly (a separator byte in a field that some other writer
// stored, a time stored as text) makes the read fall back to the plain
// columns for its page, so that what a read returns never depends on the
// packing.
const (
	packedHead = `SELECT concat_ws(x'ff', position, version, time, coalesce(octet_length(data), -1), `
	packedTail = `event_id, type, source, content_type, coalesce(` + SelectAttrs + `, ''), data) FROM events`

	// SelectPacked is SelectEvents packed.
	SelectPacked = packedHead + `tenant, stream_id, ` + packedTail
	// SelectStreamPacked is SelectStreamEvents packed.
	SelectStreamPacked = packedHead + packedTail
)

// errUnpacked says that a packed row did not decode; the page is read
// again with the plain columns.
var errUnpacked = errors.New("packed row does not decode")

// packedScanner decodes rows of SelectPacked (or SelectStreamPacked).
// Every string of an event is a substring of its row's column, and its
// data the column's tail: one allocation for all of them, and data is
// not copied again (a copy of it cost a read of the log 7% of its CPU
// time, counting the collection of the garbage). The driver returns a
// new string for each value (modernc.org/sqlite copies a TEXT value out
// of SQLite into memory of its own, and database/sql hands that string
// over), so no one else reads the column: data, which a caller may
// change, is a []byte over its tail, which no string field overlaps
// (TestPackedDataOwned).
type packedScanner struct {
	// col is the column of the row being scanned, kept for the message
	// of a row that does not decode; it is dropped once the row decoded,
	// since its tail is then the event's data.
	col string
	// tenant and stream, when known, fill the events of
	// SelectStreamPacked, which does not read them.
	known          bool
	tenant, stream string
}

// scan decodes one row into e.
func (p *packedScanner) scan(rows *sql.Rows, e *envelope.Event) error {
	p.col = ""
	if err := rows.Scan(&p.col); err != nil {
		return err
	}
	if err := p.decode(p.col, e); err != nil {
		return err
	}
	p.col = ""
	return nil
}

// packedFields is the number of fields of a SelectPacked column before
// its data.
const packedFields = 11

// decode decodes one packed column into e, which it leaves as it was
// when the column does not decode. s must be memory no one else reads:
// e's data is a slice of it.
func (p *packedScanner) decode(s string, e *envelope.Event) error {
	want := packedFields
	if p.known {
		want -= 2
	}
	// Split at the first want separators at most: what follows the last
	// of them is data, whatever bytes it holds.
	var f [packedFields + 1]string
	n := 0
	for n < want {
		i := strings.IndexByte(s, 0xff)
		if i < 0 {
			break
		}
		f[n], s = s[:i], s[i+1:]
		n++
	}
	f[n] = s
	n++
	pos, ok1 := parseInt(f[0])
	ver, ok2 := parseInt(f[1])
	nanos, ok3 := parseInt(f[2])
	dlen, ok4 := parseInt(f[3])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return errUnpacked
	}
	// NULL data is left out, with its separator; any other is there, of
	// its length exactly. A separator byte in a string field moves the
	// split and fails one of these.
	var data string
	switch {
	case dlen == -1 && n == want:
	case dlen >= 0 && n == want+1 && int64(len(f[want])) == dlen:
		data = f[want]
	default:
		return errUnpacked
	}
	k := 4
	if p.known {
		e.Tenant, e.Stream = p.tenant, p.stream
	} else {
		e.Tenant, e.Stream = f[4], f[5]
		k = 6
	}
	e.ID, e.Type, e.Source, e.DataContentType = f[k], f[k+1], f[k+2], f[k+3]
	e.Position, e.StreamVersion = pos, ver
	e.Time = time.Unix(0, nanos).UTC()
	e.TimeSet = e.Time.IsZero()
	if dlen > 0 {
		// Data is the last field: no string field shares its bytes.
		e.Data = unsafe.Slice(unsafe.StringData(data), len(data))
	}
	if attrs := f[k+4]; attrs != "" {
		// A non-NULL SelectAttrs is never empty: it holds three NULs.
		if err := splitAttrs(attrs, e); err != nil {
			*e = envelope.Event{}
			return errUnpacked
		}
	}
	return nil
}

// parseInt parses a decimal int64 as SQLite writes one, reporting
// whether s is one.
func parseInt(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		// Longer ones are rare (times from 2001-09-09 on have 19
		// digits): strconv checks their range.
		v, err := strconv.ParseInt(s, 10, 64)
		return v, err == nil
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
		if len(s) == 0 {
			return 0, false
		}
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + int64(c)
	}
	if neg {
		v = -v
	}
	return v, true
}

// scanPacked appends the events of rows to page, closing rows. It
// returns errUnpacked, and page as it was, when a row does not decode.
func scanPacked(rows *sql.Rows, sc *packedScanner, page []envelope.Event) ([]envelope.Event, error) {
	defer rows.Close()
	n := len(page)
	for rows.Next() {
		page = append(page, envelope.Event{})
		if err := sc.scan(rows, &page[len(page)-1]); err != nil {
			if errors.Is(err, errUnpacked) {
				clear(page[n:])
				return page[:n], err
			}
			return page[:len(page)-1], err
		}
	}
	if err := rows.Err(); err != nil {
		return page, err
	}
	return page, rows.Close()
}

// readPacked runs a packed query and decodes its rows, or, when a row does
// not decode, runs the plain query in its place.
func readPacked(page []envelope.Event, sc *packedScanner, packed func() (*sql.Rows, error),
	plain func() (*sql.Rows, error)) ([]envelope.Event, error) {
	rows, err := packed()
	if err != nil {
		return page, err
	}
	page, err = scanPacked(rows, sc, page)
	if !errors.Is(err, errUnpacked) {
		return page, err
	}
	if rows, err = plain(); err != nil {
		return page, err
	}
	es := NewEventScanner()
	if sc.known {
		es = NewStreamEventScanner(sc.tenant, sc.stream)
	}
	return sqlshared.ScanEvents(rows, es, page)
}
