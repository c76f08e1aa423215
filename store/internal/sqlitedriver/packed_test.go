package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
	"github.com/google/go-cmp/cmp"
)

// packedDB writes events to a new file with the store's schema and
// returns the file's reader and a plain read of every row.
type packedDB struct {
	w      driver.Writer
	conn   *sql.Conn
	reader driver.Reader
	rdb    *sql.DB
	next   int64
}

func newPackedDB(t *testing.T) *packedDB {
	t.Helper()
	ctx := context.Background()
	cfg := driver.OpenConfig{Path: filepath.Join(t.TempDir(), "p.db"), BusyTimeout: time.Second, Synchronous: "NORMAL", JournalSizeLimit: 1 << 20}
	wdb, err := Driver{}.OpenWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wdb.Close() })
	conn, err := wdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := (Driver{}).ApplyMigration(ctx, conn, m, nil); err != nil {
			t.Fatal(m.Name, err)
		}
	}
	w, err := Exec{}.PrepareWriter(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	rdb, err := Driver{}.OpenReader(cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	r, err := Exec{}.PrepareReader(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return &packedDB{w: w, conn: conn, reader: r, rdb: rdb, next: 1}
}

// add appends evs to a new stream of tenant.
func (p *packedDB) add(t *testing.T, tenant, stream string, evs []envelope.Event) {
	t.Helper()
	ctx := context.Background()
	for i := range evs {
		evs[i].StreamVersion = int64(i + 1)
	}
	if err := p.w.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.w.InsertEvents(ctx, driver.EventBatch{Tenant: tenant, Stream: stream, Events: evs, FirstPosition: p.next, RecordedAt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := p.w.CreateStream(ctx, tenant, stream, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	p.next += int64(len(evs))
}

// plain reads the rows of q (a SelectEvents query) with the plain
// columns.
func (p *packedDB) plain(t *testing.T, q string, args ...any) []envelope.Event {
	t.Helper()
	rows, err := p.rdb.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sqlshared.ScanEvents(rows, NewEventScanner(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// randomEvents returns n events with every attribute drawn at random:
// data of any bytes (0x00 and 0xFF among them), empty or none, times
// from year 1 to 9999 (some stored as text), the zero instant, and each
// optional attribute present or not.
func randomEvents(rng *rand.Rand, prefix string, n int) []envelope.Event {
	var evs []envelope.Event
	types := []string{"order.placed", "order.paid", "ü.ñ"}
	for i := range n {
		e := envelope.Event{
			ID:              fmt.Sprintf("%s-%d", prefix, i),
			Type:            types[rng.IntN(len(types))],
			Source:          "/src/" + fmt.Sprint(rng.IntN(3)),
			DataContentType: "application/octet-stream",
		}
		switch rng.IntN(6) {
		case 0:
			e.Time, e.TimeSet = time.Time{}, true
		case 1:
			e.Time = time.Date(1+rng.IntN(9999), 1, 2, 3, 4, 5, rng.IntN(1e9), time.UTC)
		default:
			e.Time = time.Unix(0, rng.Int64()).UTC()
		}
		switch rng.IntN(4) {
		case 0: // no data
		case 1:
			e.Data = []byte{}
		default:
			e.Data = make([]byte, rng.IntN(300))
			for j := range e.Data {
				e.Data[j] = []byte{0, 0xff, 0xfe, 'x', 0x80}[rng.IntN(5)]
			}
		}
		if rng.IntN(2) == 0 {
			e.DataSchema = "https://example.com/s/" + fmt.Sprint(i)
		}
		if rng.IntN(2) == 0 {
			e.CorrelationID = "corr-" + fmt.Sprint(i)
		}
		if rng.IntN(2) == 0 {
			e.CausationID = "cause-" + fmt.Sprint(i)
		}
		if rng.IntN(3) == 0 {
			e.Extensions = map[string]any{"traceparent": "00-" + fmt.Sprint(i), "n": int32(i), "ok": true}
		}
		evs = append(evs, e)
	}
	return evs
}

// readAll reads the log through the reader in pages of n.
func readAll(t *testing.T, r driver.Reader, f *driver.LogFilter, n int) []envelope.Event {
	t.Helper()
	var out []envelope.Event
	from := int64(1)
	if f.Backward {
		from = 1 << 62
	}
	for {
		page, err := r.ReadAll(context.Background(), nil, f, from, n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < n {
			return out
		}
		from = page[len(page)-1].Position + 1
		if f.Backward {
			from = page[len(page)-1].Position - 1
		}
	}
}

// TestPackedReadsExact: events of every kind read through the packed
// columns come back exactly as the plain columns read them, in log
// reads (every filter) and stream reads (both directions); every row
// whose time is stored as an integer decodes from its packed column
// without falling back to the plain columns.
func TestPackedReadsExact(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	p := newPackedDB(t)
	streams := []struct{ tenant, stream string }{{"acme", "a"}, {"acme", "b"}, {"globex", "a"}, {"globex", "c-1"}}
	for i, s := range streams {
		p.add(t, s.tenant, s.stream, randomEvents(rng, fmt.Sprint(i), 40+rng.IntN(40)))
	}
	ctx := context.Background()

	// Row by row: the packed column decodes to what the plain columns hold.
	want := p.plain(t, SelectEvents+` ORDER BY position`)
	rows, err := p.rdb.Query(SelectPacked + ` ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	sc := &packedScanner{}
	i, fell := 0, 0
	for rows.Next() {
		var got envelope.Event
		err := sc.scan(rows, &got)
		switch {
		case errors.Is(err, errUnpacked):
			if _, isInt := timeValue(want[i].Time).(int64); isInt {
				t.Errorf("position %d: does not decode: %q", want[i].Position, sc.col)
			}
			fell++
		case err != nil:
			t.Fatal(err)
		default:
			if diff := cmp.Diff(want[i], got); diff != "" {
				t.Errorf("position %d (-plain +packed):\n%s", want[i].Position, diff)
			}
		}
		i++
	}
	if err := rows.Close(); err != nil || i != len(want) || fell == len(want) {
		t.Fatalf("decoded %d rows of %d (%d fell back): %v", i, len(want), fell, err)
	}

	// The reader's reads, with pages of several sizes.
	for _, n := range []int{1, 7, 1000} {
		for _, f := range []driver.LogFilter{{}, {Tenant: "globex"}, {Types: []string{"order.paid", "ü.ñ"}},
			{StreamPrefix: "c-"}, {CorrelationID: "corr-3"}, {Backward: true}, {Tenant: "acme", Backward: true}} {
			q, args := logQuery(SelectEvents, &f, 1, 1<<30, 0)
			if f.Backward {
				q, args = logQuery(SelectEvents, &f, 1<<62, 1<<30, 0)
			}
			if diff := cmp.Diff(p.plain(t, q, args...), readAll(t, p.reader, &f, n)); diff != "" {
				t.Errorf("ReadAll %+v in pages of %d (-plain +read):\n%s", f, n, diff)
			}
		}
	}
	for _, s := range streams {
		want := p.plain(t, SelectEvents+` WHERE tenant = ? AND stream_id = ? ORDER BY version`, s.tenant, s.stream)
		got, err := p.reader.ReadStream(ctx, nil, s.tenant, s.stream, 1, false, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ReadStream %s/%s (-plain +read):\n%s", s.tenant, s.stream, diff)
		}
		back, err := p.reader.ReadStream(ctx, nil, s.tenant, s.stream, int64(len(want)), true, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i := range back {
			if diff := cmp.Diff(want[len(want)-1-i], back[i]); diff != "" {
				t.Errorf("ReadStream %s/%s backward (-plain +read):\n%s", s.tenant, s.stream, diff)
			}
		}
	}
}

// timeValue is how the writer stores t.
func timeValue(t time.Time) any {
	if t.Before(time.Unix(0, -1<<63)) || t.After(time.Unix(0, 1<<63-1)) {
		return "text"
	}
	return t.UnixNano()
}

// TestPackedReadsFallBack: a row that some other writer stored with the
// packing's separator byte in a string column, or with a time that is
// not an integer, does not decode from its packed column, and the page
// it is on is read with the plain columns: the reads return it exactly.
func TestPackedReadsFallBack(t *testing.T) {
	p := newPackedDB(t)
	rng := rand.New(rand.NewPCG(1, 2))
	evs := randomEvents(rng, "e", 20)
	for i := range evs {
		evs[i].Time = time.Unix(0, int64(i+1)*1e9).UTC()
		// No attributes, and data: a separator at the end of the content
		// type then moves only the data.
		evs[i].DataSchema, evs[i].CorrelationID, evs[i].CausationID, evs[i].Extensions = "", "", "", nil
		evs[i].Data = []byte("d\xff" + fmt.Sprint(i))
	}
	p.add(t, "acme", "a", evs)
	ctx := context.Background()
	for i, c := range []struct{ name, set string }{
		{"source", `source = 'x' || x'ff' || 'y'`},
		{"event_id", `event_id = x'ff' || event_id`},
		{"tenant", `tenant = 'acme' || x'ff'`},
		{"content_type", `content_type = content_type || x'ff' || 'q'`},
		{"content_type_end", `content_type = content_type || x'ff'`},
		{"time", `time = '2001-02-03T04:05:06.123456789Z'`},
	} {
		at := 2 * (i + 1)
		t.Run(c.name, func(t *testing.T) {
			if _, err := p.conn.ExecContext(ctx, `UPDATE events SET `+c.set+` WHERE position = ?`, at); err != nil {
				t.Fatal(err)
			}
			var col string
			if err := p.rdb.QueryRow(SelectPacked+` WHERE position = ?`, at).Scan(&col); err != nil {
				t.Fatal(err)
			}
			if err := (&packedScanner{}).decode(col, new(envelope.Event)); !errors.Is(err, errUnpacked) {
				t.Fatalf("packed column %q decodes: %v", col, err)
			}
			want := p.plain(t, SelectEvents+` ORDER BY position`)
			if diff := cmp.Diff(want, readAll(t, p.reader, &driver.LogFilter{}, 1000)); diff != "" {
				t.Errorf("ReadAll (-plain +read):\n%s", diff)
			}
			want = p.plain(t, SelectEvents+` WHERE tenant = 'acme' AND stream_id = 'a' ORDER BY version`)
			got, err := p.reader.ReadStream(ctx, nil, "acme", "a", 1, false, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ReadStream (-plain +read):\n%s", diff)
			}
		})
	}
}

// TestPackedDataOwned: the data of an event read through the packed
// column, which is a slice of the column the driver returned, not a
// copy, is the caller's: changing it changes no other field of the event
// or of any other event read, and no later read (the driver returns new
// memory for each value, and each read of the same row).
func TestPackedDataOwned(t *testing.T) {
	p := newPackedDB(t)
	rng := rand.New(rand.NewPCG(3, 4))
	evs := randomEvents(rng, "e", 60)
	for i := range evs {
		evs[i].Time = time.Unix(0, int64(i+1)*1e9).UTC()
		// The same data in every event: a driver that shared the memory
		// of equal values would show it.
		evs[i].Data = []byte("same \xff data")
	}
	p.add(t, "acme", "a", evs)
	p.add(t, "globex", "b", evs[:1])
	ctx := context.Background()
	want := p.plain(t, SelectEvents+` ORDER BY position`)
	for _, read := range []func() []envelope.Event{
		func() []envelope.Event { return readAll(t, p.reader, &driver.LogFilter{}, 1000) },
		func() []envelope.Event { return readAll(t, p.reader, &driver.LogFilter{}, 7) },
		func() []envelope.Event {
			got, err := p.reader.ReadStream(ctx, nil, "acme", "a", 1, false, 1000)
			if err != nil {
				t.Fatal(err)
			}
			return got
		},
	} {
		first, second := read(), read()
		for i := range first {
			for j := range first[i].Data {
				first[i].Data[j] = '#'
			}
		}
		for i := range first {
			changed := first[i]
			changed.Data = want[i].Data
			if diff := cmp.Diff(want[i], changed); diff != "" {
				t.Errorf("position %d: changing the data changed the event (-read +changed):\n%s", want[i].Position, diff)
			}
			if diff := cmp.Diff(want[i], second[i]); diff != "" {
				t.Errorf("position %d: changing the data of one read changed another (-plain +read):\n%s", want[i].Position, diff)
			}
		}
		if third := read(); !cmp.Equal(want[:len(third)], third) {
			t.Errorf("a read after the data of an earlier one changed differs from the plain read")
		}
	}
}
