package store_test

// Benchmarks of the store on PostgreSQL against raw pgx in the same run.
// They need a server: set EVENTLITE_TEST_POSTGRES to its address
// (without it they skip). The append benchmarks have three sides, each
// on a schema of its own, each opening its connections only for its turn
// (the server's connections are few: three pools of 64 would not fit)
// and warming them before the clock starts:
//
//   - head: raw pgx running the driver's own statements
//     (store/internal/pgdriver): BEGIN and SET LOCAL search_path, the
//     head row locked by moving its commit counter (with the commit's
//     NOTIFY), the stream's state read, the events inserted with the head
//     row's move, the streams row of a new stream, COMMIT; one
//     transaction per append, whatever the number of appenders.
//   - seq: the same without the head row: positions from an identity
//     column, no lock, no NOTIFY. It skips events (a follower may pass a
//     position that a slower transaction fills later); it is measured to
//     show what positions in commit order cost.
//   - store: store.Append on a store opened on the side's schema.
//
// x_raw is store / head, x_seq is head / seq. Every append of the store
// side is timed for its latency. The multi-process case re-executes this
// test binary (TestPostgresBenchChild) as helper processes, four per side,
// each with its store or pool. BenchmarkPostgresLog reads a log and
// catches a projection up against raw pgx. See BENCHMARKS.md for the
// commands and the figures.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/pgaddr"
	"github.com/eventlite/eventlite/store/internal/pgdriver"
	"github.com/eventlite/eventlite/store/storetest"
)

// The helper process's environment (TestPostgresBenchChild).
const (
	pgChildEnv     = "EVENTLITE_PGBENCH_CHILD"     // the side: store, head or seq
	pgAddrEnv      = "EVENTLITE_PGBENCH_ADDR"      // the side's address, eventlite_schema included
	pgOpsEnv       = "EVENTLITE_PGBENCH_OPS"       // how many appends the process makes
	pgAppendersEnv = "EVENTLITE_PGBENCH_APPENDERS" // how many goroutines make them
	pgProcEnv      = "EVENTLITE_PGBENCH_PROC"      // the process's number, for its stream names
)

// pgTenant is the tenant of every benchmark event.
const pgTenant = "acme"

// pgSideSchema makes a fresh schema (dropped when b ends), migrated by
// opening a store on it once, and returns its address. A seq side also
// gets events_seq: the events table with an identity column for its
// positions (and the same trigger refusing removed ids).
func pgSideSchema(b *testing.B, base, side string) string {
	b.Helper()
	ctx := context.Background()
	addr := storetest.PostgresSchema(b, base)
	s, err := store.Open(ctx, addr, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if side == "seq" {
		pool, err := pgRawPool(ctx, addr, 1, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		if _, err := pool.Exec(ctx, `CREATE TABLE events_seq (LIKE events INCLUDING ALL);
ALTER TABLE events_seq ALTER COLUMN position ADD GENERATED ALWAYS AS IDENTITY;
CREATE TRIGGER events_seq_removed_id BEFORE INSERT ON events_seq FOR EACH ROW EXECUTE FUNCTION events_removed_id()`); err != nil {
			b.Fatal(err)
		}
	}
	return addr
}

// pgSchemaOf splits an address into the server's address and the schema
// its eventlite_schema parameter names.
func pgSchemaOf(addr string) (base, schema string, err error) {
	u, err := url.Parse(addr)
	if err != nil {
		return "", "", err
	}
	q := u.Query()
	schema = q.Get(pgaddr.SchemaParam)
	q.Del(pgaddr.SchemaParam)
	u.RawQuery = q.Encode()
	return u.String(), schema, nil
}

// pgRawPool opens a pgx pool of conns connections on the schema of addr
// (its search path) and makes every connection; warm, when set, runs on
// each.
func pgRawPool(ctx context.Context, addr string, conns int, warm func(*pgx.Conn) error) (*pgxpool.Pool, error) {
	base, schema, err := pgSchemaOf(addr)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(base)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	cfg.ConnConfig.RuntimeParams["application_name"] = "eventlite bench " + schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	held := make([]*pgxpool.Conn, 0, conns)
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for range conns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			pool.Close()
			return nil, err
		}
		held = append(held, c)
		if warm != nil {
			if err := warm(c.Conn()); err != nil {
				pool.Close()
				return nil, err
			}
		}
	}
	return pool, nil
}

// ---------------------------------------------------------------------
// The raw sides.

// pgSeqCols are the columns events_seq's insert writes: the driver's
// (pgdriver.InsertEventsSQL) without position.
const pgSeqCols = `tenant, stream_id, version, event_id, type, source, time,
	content_type, data_schema, data, correlation_id, causation_id, extensions, recorded_at`

var pgSeqColTypes = []string{"text", "text", "bigint", "text", "text", "text", "bigint",
	"text", "text", "bytea", "text", "text", "text", "bigint"}

// pgSeqStreamStateSQL is the driver's stream state read without the head
// row.
const pgSeqStreamStateSQL = `SELECT (SELECT deleted FROM streams WHERE tenant = $1 AND stream_id = $2),
	COALESCE((SELECT max(version) FROM events_seq WHERE tenant = $1 AND stream_id = $2), 0)`

// pgSeqChunk is the most events one INSERT of the seq side writes.
const pgSeqChunk = 32

// pgSeqInsertSQL holds, for k = 1..pgSeqChunk events, the seq side's
// insert (a VALUES list: the driver's insert before it took arrays).
var pgSeqInsertSQL = func() (q [pgSeqChunk]string) {
	for k := 1; k <= pgSeqChunk; k++ {
		var sb strings.Builder
		sb.WriteString("INSERT INTO events_seq (" + pgSeqCols + ")\n\tSELECT v.* FROM (VALUES ")
		n := 1
		for i := range k {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteByte('(')
			for c, t := range pgSeqColTypes {
				if c > 0 {
					sb.WriteString(", ")
				}
				fmt.Fprintf(&sb, "$%d::%s", n, t)
				n++
			}
			sb.WriteByte(')')
		}
		sb.WriteString(") AS v (" + pgSeqCols + `)
	WHERE NOT EXISTS (SELECT 1 FROM removed_event_ids r WHERE r.tenant = v.tenant AND r.event_id = v.event_id)
	ON CONFLICT DO NOTHING`)
		q[k-1] = sb.String()
	}
	return q
}()

// pgRaw appends with raw pgx, one transaction per append on a
// connection of the pool: the driver's statements (head), or positions
// from events_seq's identity column with no head row (seq).
type pgRaw struct {
	pool    *pgxpool.Pool
	head    bool
	begin   string // BEGIN and SET LOCAL search_path, one round trip, as the driver sends them
	channel string // the schema's NOTIFY channel, as the driver names it
}

// openPGRaw opens the pool and warms each connection as the store's
// writer is warmed (pgLocal.open): one append of warm's events, rolled
// back, so that its statements are prepared and its session has read the
// tables before the clock starts.
func openPGRaw(ctx context.Context, addr string, head bool, conns int, warm []rawEvent) (*pgRaw, error) {
	_, schema, err := pgSchemaOf(addr)
	if err != nil {
		return nil, err
	}
	r := &pgRaw{head: head, channel: "eventlite_" + schema,
		begin: "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL search_path TO " + pgx.Identifier{schema}.Sanitize()}
	r.pool, err = pgRawPool(ctx, addr, conns, func(c *pgx.Conn) error {
		return r.appendOn(ctx, c, "warmup", warm, false)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (r *pgRaw) Close() error {
	r.pool.Close()
	return nil
}

func (r *pgRaw) append(ctx context.Context, stream string, evs []rawEvent, _ []envelope.Event) error {
	c, err := r.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return r.appendOn(ctx, c.Conn(), stream, evs, true)
}

// appendOn appends evs in one transaction on c, and commits it, or rolls
// it back when commit is false.
func (r *pgRaw) appendOn(ctx context.Context, c *pgx.Conn, stream string, evs []rawEvent, commit bool) (err error) {
	if _, err := c.Exec(ctx, r.begin); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = c.Exec(context.Background(), "ROLLBACK")
		}
	}()
	var (
		deleted      *int64
		version, pos int64
	)
	if r.head {
		if _, err := c.Exec(ctx, pgdriver.BeginWriteSQL, r.channel); err != nil {
			return err
		}
		err = c.QueryRow(ctx, pgdriver.StreamStateSQL, pgTenant, stream).Scan(&deleted, &version, &pos)
	} else {
		err = c.QueryRow(ctx, pgSeqStreamStateSQL, pgTenant, stream).Scan(&deleted, &version)
	}
	if err != nil {
		return err
	}
	now := time.Now().UnixNano()
	if r.head {
		// The driver's insert: every event in one statement.
		n := len(evs)
		versions, times := make([]int64, n), make([]int64, n)
		ids, types, data := pgCols(evs)
		sources, cts, empty := make([]string, n), make([]string, n), make([]string, n)
		exts := make([]*string, n)
		for i := range evs {
			versions[i], times[i], sources[i], cts[i] = version+int64(i+1), now, rawSource, rawContentType
		}
		tag, err := c.Exec(ctx, pgdriver.InsertEventsSQL, pos+1, pgTenant, stream, now, pos+int64(n),
			versions, ids, types, sources, times, cts, empty, data, empty, empty, exts)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != int64(n) {
			return fmt.Errorf("raw insert: %d of %d events stored", tag.RowsAffected(), n)
		}
	}
	var args []any
	for start := 0; start < len(evs) && !r.head; start += pgSeqChunk {
		chunk := evs[start:min(start+pgSeqChunk, len(evs))]
		args = args[:0]
		for i, e := range chunk {
			args = append(args, pgTenant, stream, version+int64(start+i+1), e.ID, e.Type, rawSource,
				now, rawContentType, "", e.Data, "", "", nil, now)
		}
		tag, err := c.Exec(ctx, pgSeqInsertSQL[len(chunk)-1], args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != int64(len(chunk)) {
			return fmt.Errorf("raw insert: %d of %d events stored", tag.RowsAffected(), len(chunk))
		}
	}
	if deleted == nil {
		if _, err := c.Exec(ctx, pgdriver.CreateStreamSQL, pgTenant, stream, now); err != nil {
			return err
		}
	}
	if !commit {
		_, err = c.Exec(ctx, "ROLLBACK")
		return err
	}
	_, err = c.Exec(ctx, "COMMIT")
	return err
}

// pgStore appends with store.Append.
type pgStore struct{ s *store.Store }

func (p pgStore) Close() error { return p.s.Close() }

func (p pgStore) append(ctx context.Context, stream string, _ []rawEvent, evs []envelope.Event) error {
	_, err := p.s.Append(ctx, pgTenant, stream, store.Any, evs...)
	return err
}

// pgAppender is a side's way to append one transaction of events, given
// raw (raw sides) and as envelope events (the store).
type pgAppender interface {
	append(ctx context.Context, stream string, raw []rawEvent, evs []envelope.Event) error
	Close() error
}

// openPGAppender opens a side and warms it with one append of warm's
// events (the store's is committed, to a stream of its own; the raw
// sides roll theirs back on each connection).
func openPGAppender(ctx context.Context, side, addr string, conns int, warm []rawEvent) (pgAppender, error) {
	switch side {
	case "store":
		// A long busy timeout: 64 appenders in four processes queue on
		// the head row, and a benchmark that fails measures nothing.
		s, err := store.Open(ctx, addr, &store.Options{BusyTimeout: time.Minute})
		if err != nil {
			return nil, err
		}
		if _, err := s.Append(ctx, pgTenant, "warmup", store.Any, benchEnvelopes(warm)...); err != nil {
			_ = s.Close()
			return nil, err
		}
		return pgStore{s}, nil
	case "head", "seq":
		return openPGRaw(ctx, addr, side == "head", conns, warm)
	}
	return nil, fmt.Errorf("unknown side %q", side)
}

// ---------------------------------------------------------------------
// Pairing: each side opens, runs a chunk of k appends timed, and closes;
// the sides take turns, rotating which goes first.

type pgSide struct {
	name  string
	open  func(k int) error // untimed: connect and make the chunk's events
	run   func() ([]time.Duration, error)
	close func() error

	ops int
	dur time.Duration
	lat []time.Duration
}

func (s *pgSide) rate(perOp float64) float64 {
	if s.dur <= 0 {
		return 0
	}
	return float64(s.ops) * perOp / s.dur.Seconds()
}

func runPGPaired(b *testing.B, chunk int, sides ...*pgSide) {
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		k := min(chunk, b.N-done)
		for i := range sides {
			s := sides[(i+round)%len(sides)]
			b.StopTimer()
			if err := s.open(k); err != nil {
				b.Fatalf("%s: open: %v", s.name, err)
			}
			b.StartTimer()
			t0 := time.Now()
			lat, err := s.run()
			s.dur += time.Since(t0)
			s.ops += k
			s.lat = append(s.lat, lat...)
			b.StopTimer()
			cerr := s.close()
			if err != nil || cerr != nil {
				b.Fatalf("%s: %v", s.name, errors.Join(err, cerr))
			}
			b.StartTimer()
		}
		done += k
	}
	b.StopTimer()
}

// reportPG reports each side's events/s, x_raw (store / head), x_seq
// (head / seq), the store's time per append as ns/op and its latencies.
func reportPG(b *testing.B, perOp float64, head, seq, st *pgSide) {
	for _, s := range []*pgSide{head, seq, st} {
		b.ReportMetric(s.rate(perOp), s.name+"_ev/s")
	}
	if r := head.rate(perOp); r > 0 {
		b.ReportMetric(st.rate(perOp)/r, "x_raw")
	}
	if r := seq.rate(perOp); r > 0 {
		b.ReportMetric(head.rate(perOp)/r, "x_seq")
	}
	if st.ops > 0 {
		b.ReportMetric(float64(st.dur.Nanoseconds())/float64(st.ops), "ns/op")
	}
	reportLatency(b, "store_", st.lat)
}

// pgLocal runs a side's appends in this process: k appends of perTx
// events from conc goroutines. With one goroutine the appends go to 100
// streams in turn; with several, each goroutine appends to a stream of its
// own.
type pgLocal struct {
	side, addr  string
	conc, perTx int
	prefix      string // of the stream names
	g           *benchGen

	a   pgAppender
	raw [][]rawEvent
	evs [][]envelope.Event
}

func (l *pgLocal) stream(w, i int) string {
	if l.conc == 1 {
		return fmt.Sprintf("%sorder-%03d", l.prefix, i%100)
	}
	return fmt.Sprintf("%sappender-%02d", l.prefix, w)
}

func (l *pgLocal) open(k int) error {
	l.raw, l.evs = l.raw[:0], l.evs[:0]
	for range k {
		r := l.g.raw(l.perTx)
		l.raw = append(l.raw, r)
		if l.side == "store" {
			l.evs = append(l.evs, benchEnvelopes(r))
		} else {
			l.evs = append(l.evs, nil)
		}
	}
	a, err := openPGAppender(context.Background(), l.side, l.addr, l.conc, l.g.raw(l.perTx))
	l.a = a
	return err
}

func (l *pgLocal) run() ([]time.Duration, error) {
	ctx := context.Background()
	lats := make([][]time.Duration, l.conc)
	errs := make([]error, l.conc)
	var wg sync.WaitGroup
	for w := range l.conc {
		wg.Go(func() {
			for i := w; i < len(l.raw); i += l.conc {
				t0 := time.Now()
				if err := l.a.append(ctx, l.stream(w, i), l.raw[i], l.evs[i]); err != nil {
					errs[w] = err
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return all, errors.Join(errs...)
}

func (l *pgLocal) close() error {
	if l.a == nil {
		return nil
	}
	err := l.a.Close()
	l.a = nil
	return err
}

func pgLocalSide(name, addr string, conc, perTx int, seed uint64) *pgSide {
	l := &pgLocal{side: name, addr: addr, conc: conc, perTx: perTx, g: newBenchGen(seed)}
	return &pgSide{name: name, open: l.open, run: l.run, close: l.close}
}

// BenchmarkPostgresAppend appends one event or 100 per transaction from
// one goroutine, or one event per append from 16 or 64 goroutines of one
// process: head, seq and store (see the file's comment). Latencies
// (store_p50_ms, ...) are every store append's, from the call to its
// return.
func BenchmarkPostgresAppend(b *testing.B) {
	base := storetest.PostgresBase(b)
	for _, c := range []struct {
		name        string
		perTx, conc int
		chunk       int
	}{
		{"1ev", 1, 1, 200},
		{"100ev", 100, 1, 10},
		{"appenders=16", 1, 16, 20 * 16},
		{"appenders=64", 1, 64, 10 * 64},
	} {
		b.Run(c.name, func(b *testing.B) {
			var sides []*pgSide
			for _, name := range []string{"head", "seq", "store"} {
				sides = append(sides, pgLocalSide(name, pgSideSchema(b, base, name), c.conc, c.perTx, 7))
			}
			runPGPaired(b, c.chunk, sides...)
			reportPG(b, float64(c.perTx), sides[0], sides[1], sides[2])
		})
	}
}

// ---------------------------------------------------------------------
// Several processes.

// pgProcs runs a side's appends in procs helper processes of conc
// goroutines each (one event per append, a stream per goroutine), started
// for each chunk and told to begin together once all are connected. The
// chunk's time runs from that signal to the last process's report.
type pgProcs struct {
	side, addr  string
	procs, conc int
	kids        []*pgKid
}

type pgKid struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr strings.Builder
}

// pgKidDone is a helper process's report: the latency of each of its
// appends, in microseconds.
type pgKidDone struct {
	LatUS []int64 `json:"lat_us"`
}

func (p *pgProcs) open(k int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for i := range p.procs {
		ops := k / p.procs
		if i < k%p.procs {
			ops++
		}
		// -test.timeout: a helper orphaned by a dying parent still ends.
		cmd := exec.Command(exe, "-test.run=^TestPostgresBenchChild$", "-test.count=1", "-test.timeout=10m")
		cmd.Env = append(os.Environ(), pgChildEnv+"="+p.side, pgAddrEnv+"="+p.addr,
			pgOpsEnv+"="+strconv.Itoa(ops), pgAppendersEnv+"="+strconv.Itoa(p.conc), pgProcEnv+"="+strconv.Itoa(i))
		kid := &pgKid{cmd: cmd}
		cmd.Stderr = &kid.stderr
		if kid.stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		kid.out = bufio.NewScanner(out)
		kid.out.Buffer(nil, 64<<20)
		if err := cmd.Start(); err != nil {
			return err
		}
		p.kids = append(p.kids, kid)
	}
	for _, kid := range p.kids {
		if _, err := kid.line("READY"); err != nil {
			return err
		}
	}
	return nil
}

// line reads the process's lines up to the one that starts with prefix
// and returns the rest of it.
func (kid *pgKid) line(prefix string) (string, error) {
	for kid.out.Scan() {
		if rest, ok := strings.CutPrefix(kid.out.Text(), prefix); ok {
			return strings.TrimSpace(rest), nil
		}
	}
	_ = kid.cmd.Process.Kill()
	_ = kid.cmd.Wait()
	return "", fmt.Errorf("helper process ended before %s: %v; stderr:\n%s", prefix, kid.out.Err(), kid.stderr.String())
}

func (p *pgProcs) run() ([]time.Duration, error) {
	for _, kid := range p.kids {
		if _, err := io.WriteString(kid.stdin, "GO\n"); err != nil {
			return nil, err
		}
	}
	var lat []time.Duration
	for _, kid := range p.kids {
		rest, err := kid.line("DONE")
		if err != nil {
			return nil, err
		}
		var d pgKidDone
		if err := json.Unmarshal([]byte(rest), &d); err != nil {
			return nil, err
		}
		for _, us := range d.LatUS {
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
	}
	return lat, nil
}

func (p *pgProcs) close() error {
	var errs []error
	for _, kid := range p.kids {
		_ = kid.stdin.Close()
		for kid.out.Scan() {
		}
		if err := kid.cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("helper process: %w; stderr:\n%s", err, kid.stderr.String()))
		}
	}
	p.kids = nil
	return errors.Join(errs...)
}

// BenchmarkPostgresProcesses appends one event per append from 4
// processes of 16 goroutines each (64 appenders), each process with its
// own store (its own writer and group commit) or its own raw pool; ev/s
// are the four processes' together.
func BenchmarkPostgresProcesses(b *testing.B) {
	base := storetest.PostgresBase(b)
	const procs, conc = 4, 16
	b.Run(fmt.Sprintf("procs=%d/appenders=%d", procs, conc), func(b *testing.B) {
		var sides []*pgSide
		for _, name := range []string{"head", "seq", "store"} {
			p := &pgProcs{side: name, addr: pgSideSchema(b, base, name), procs: procs, conc: conc}
			b.Cleanup(func() {
				for _, kid := range p.kids {
					_ = kid.cmd.Process.Kill()
					_ = kid.cmd.Wait()
				}
			})
			sides = append(sides, &pgSide{name: name, open: p.open, run: p.run, close: p.close})
		}
		runPGPaired(b, 10*procs*conc, sides...)
		reportPG(b, 1, sides[0], sides[1], sides[2])
	})
}

// TestPostgresBenchChild is not a test: it is the body of the helper
// processes BenchmarkPostgresProcesses starts. Without
// EVENTLITE_PGBENCH_CHILD it returns at once. It opens its side, makes
// its events, says READY, waits for GO on stdin, appends, says DONE with
// its latencies and closes. On failure it says why on stderr and exits
// with status 3.
func TestPostgresBenchChild(t *testing.T) {
	side := os.Getenv(pgChildEnv)
	if side == "" {
		return
	}
	if err := pgBenchChild(side); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

func pgBenchChild(side string) error {
	num := func(name string) (int, error) {
		n, err := strconv.Atoi(os.Getenv(name))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return n, nil
	}
	ops, err := num(pgOpsEnv)
	if err != nil {
		return err
	}
	conc, err := num(pgAppendersEnv)
	if err != nil {
		return err
	}
	proc, err := num(pgProcEnv)
	if err != nil {
		return err
	}
	l := &pgLocal{side: side, addr: os.Getenv(pgAddrEnv), conc: conc, perTx: 1,
		prefix: fmt.Sprintf("p%d-", proc), g: newBenchGen(uint64(100 + proc))}
	if err := l.open(ops); err != nil {
		return err
	}
	defer l.close()
	if _, err := os.Stdout.WriteString("READY\n"); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "GO" {
		return fmt.Errorf("no GO on stdin: %v", in.Err())
	}
	lat, err := l.run()
	if err != nil {
		return err
	}
	d := pgKidDone{LatUS: make([]int64, len(lat))}
	for i, x := range lat {
		d.LatUS[i] = x.Microseconds()
	}
	msg, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if _, err := os.Stdout.Write(append(append([]byte("DONE "), msg...), '\n')); err != nil {
		return err
	}
	return l.close()
}

// ---------------------------------------------------------------------
// Reads.

// pgReadEvents is the size of BenchmarkPostgresReadAll's log, and
// pgReadPage the page of its paged raw side: the store's (read.go).
const (
	pgReadEvents = 200_000
	pgReadPage   = 1000
)

// pgReadFixture makes a fresh schema (dropped when b ends) holding a log
// of n events: 1,000 streams interleaved, the JSON payloads of the
// append benchmarks (200-300 bytes), written by one INSERT over
// generate_series, then vacuumed and analyzed. It returns the address.
func pgReadFixture(b *testing.B, base string, n int) string {
	b.Helper()
	ctx := context.Background()
	addr := pgSideSchema(b, base, "store")
	pool, err := pgRawPool(ctx, addr, 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	g := newBenchGen(9)
	now := time.Now().UnixNano()
	if _, err := pool.Exec(ctx, `INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time,
		content_type, data, recorded_at)
	SELECT i, $1, 'order-' || lpad(((i - 1) % 1000)::text, 4, '0'), (i - 1) / 1000 + 1,
		'ev-' || lpad(i::text, 10, '0'), ($2::text[])[1 + i % 4], $3, $4::bigint + i, $5,
		($6::bytea[])[1 + i % 1024], $4::bigint + i
	FROM generate_series(1, $7::bigint) AS i`,
		pgTenant, benchTypes, rawSource, now, rawContentType, g.payloads, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO streams (tenant, stream_id, created_at)
	SELECT $1, 'order-' || lpad(i::text, 4, '0'), $2 FROM generate_series(0, 999) AS i`, pgTenant, now); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE log_head SET position = $1`, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE events`); err != nil {
		b.Fatal(err)
	}
	return addr
}

// pgRawRead reads the whole log, the columns the store reads
// (pgdriver.SelectEvents) in position order, each row scanned into Go
// values: with one SELECT (page 0), or page rows at a time from the last
// position read, as the store pages. It returns the number of events.
func pgRawRead(ctx context.Context, pool *pgxpool.Pool, page int, sink *int64) (int, error) {
	var (
		pos, version, evTime                                     int64
		tenant, stream, id, typ, source, ct, schema, corr, cause string
		data                                                     []byte
		ext                                                      *string
	)
	n := 0
	for {
		var rows pgx.Rows
		var err error
		if page == 0 {
			rows, err = pool.Query(ctx, pgdriver.SelectEvents+` ORDER BY position`)
		} else {
			rows, err = pool.Query(ctx, pgdriver.ReadAllSQL, pos+1, page)
		}
		if err != nil {
			return n, err
		}
		got := 0
		for rows.Next() {
			if err := rows.Scan(&pos, &tenant, &stream, &version, &id, &typ, &source, &evTime,
				&ct, &data, &schema, &corr, &cause, &ext); err != nil {
				rows.Close()
				return n, err
			}
			*sink += pos + int64(len(data))
			got++
		}
		rows.Close()
		n += got
		if err := rows.Err(); err != nil || page == 0 || got < page {
			return n, err
		}
	}
}

// BenchmarkPostgresLog reads a 200,000-event log (pgReadFixture, built
// once for both) from start to end per op.
//
// ReadAll: store.ReadAll (pages of 1,000, each event decoded to an
// envelope event) against raw pgx reading the same 14 columns with one
// SELECT (raw, x_raw) and in pages of 1,000 by position as the store does
// (paged, x_paged), alternately, rotating which goes first. The store and
// the raw pool stay open (all only read), and each side reads the whole
// log once before the clock starts.
//
// CatchUp: a projection runner with a no-op handler, under a name of its
// own each op, catching up from the start (projection.Runner.CatchUp,
// batches of 500), against a raw pgx loop: read 500 events by position
// (the same 14 columns), move a checkpoint row in a transaction of its
// own, commit, per page (x_raw).
func BenchmarkPostgresLog(b *testing.B) {
	base := storetest.PostgresBase(b)
	addr := pgReadFixture(b, base, pgReadEvents)
	b.Run(fmt.Sprintf("ReadAll/events=%d", pgReadEvents), func(b *testing.B) { benchPGReadAll(b, addr) })
	b.Run(fmt.Sprintf("CatchUp/events=%d", pgReadEvents), func(b *testing.B) { benchPGCatchUp(b, addr) })
}

// pgOpenLog opens a store and a one-connection raw pool on the log's
// schema, both closed when b ends.
func pgOpenLog(b *testing.B, addr string) (*store.Store, *pgxpool.Pool) {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, addr, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	pool, err := pgRawPool(ctx, addr, 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return st, pool
}

// runPGAlternate runs each side once untimed, then b.N times each,
// rotating which goes first, and reports each side's events/s (events
// per op) and the last side's time per op.
func runPGAlternate(b *testing.B, events int, sides ...*pgSide) {
	for _, s := range sides {
		if _, err := s.run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		for j := range sides {
			s := sides[(i+j)%len(sides)]
			t0 := time.Now()
			if _, err := s.run(); err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			s.dur += time.Since(t0)
			s.ops++
		}
	}
	b.StopTimer()
	for _, s := range sides {
		b.ReportMetric(s.rate(float64(events)), s.name+"_ev/s")
	}
	last := sides[len(sides)-1]
	b.ReportMetric(float64(last.dur.Nanoseconds())/float64(last.ops), "ns/op")
}

func benchPGReadAll(b *testing.B, addr string) {
	ctx := context.Background()
	st, pool := pgOpenLog(b, addr)
	var sink int64
	rawSide := func(name string, page int) *pgSide {
		return &pgSide{name: name, run: func() ([]time.Duration, error) {
			n, err := pgRawRead(ctx, pool, page, &sink)
			if err == nil && n != pgReadEvents {
				err = fmt.Errorf("%s read %d events, want %d", name, n, pgReadEvents)
			}
			return nil, err
		}}
	}
	raw, paged := rawSide("raw", 0), rawSide("paged", pgReadPage)
	ss := &pgSide{name: "store"}
	ss.run = func() ([]time.Duration, error) {
		n := 0
		for e, err := range st.ReadAll(ctx, store.ReadAllOptions{}) {
			if err != nil {
				return nil, err
			}
			sink += e.Position + int64(len(e.Data))
			n++
		}
		if n != pgReadEvents {
			return nil, fmt.Errorf("store read %d events, want %d", n, pgReadEvents)
		}
		return nil, nil
	}
	runPGAlternate(b, pgReadEvents, raw, paged, ss)
	if r := raw.rate(pgReadEvents); r > 0 {
		b.ReportMetric(ss.rate(pgReadEvents)/r, "x_raw")
	}
	if r := paged.rate(pgReadEvents); r > 0 {
		b.ReportMetric(ss.rate(pgReadEvents)/r, "x_paged")
	}
	_ = sink
}

// pgCatchUps numbers the catch-ups of a benchmark binary, for fresh
// projection and checkpoint names.
var pgCatchUps atomic.Int64

func benchPGCatchUp(b *testing.B, addr string) {
	ctx := context.Background()
	st, pool := pgOpenLog(b, addr)
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS raw_checkpoints (name TEXT PRIMARY KEY, position BIGINT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	raw := &pgSide{name: "raw"}
	raw.run = func() ([]time.Duration, error) {
		name := fmt.Sprintf("raw_%d", pgCatchUps.Add(1))
		var (
			cp, version, evTime                                      int64
			tenant, stream, id, typ, source, ct, schema, corr, cause string
			data                                                     []byte
			ext                                                      *string
		)
		n := 0
		for {
			rows, err := pool.Query(ctx, pgdriver.SelectEvents+` WHERE position > $1 ORDER BY position LIMIT 500`, cp)
			if err != nil {
				return nil, err
			}
			got := 0
			for rows.Next() {
				if err := rows.Scan(&cp, &tenant, &stream, &version, &id, &typ, &source, &evTime,
					&ct, &data, &schema, &corr, &cause, &ext); err != nil {
					rows.Close()
					return nil, err
				}
				got++
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, err
			}
			if got == 0 {
				break
			}
			n += got
			if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO raw_checkpoints (name, position) VALUES ($1, $2)
	ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position`, name, cp)
				return err
			}); err != nil {
				return nil, err
			}
		}
		if n != pgReadEvents {
			return nil, fmt.Errorf("raw loop read %d events, want %d", n, pgReadEvents)
		}
		return nil, nil
	}
	run := &pgSide{name: "runner"}
	run.run = func() ([]time.Duration, error) {
		p := projection.Projection{Name: fmt.Sprintf("noop_%d", pgCatchUps.Add(1)),
			Apply: func(context.Context, *projection.Tx, envelope.Event) error { return nil }}
		r, err := projection.NewRunner(st, p, &projection.RunnerOptions{BatchSize: 500})
		if err != nil {
			return nil, err
		}
		cp, err := r.CatchUp(ctx)
		if err == nil && cp != pgReadEvents {
			err = fmt.Errorf("CatchUp reached %d, want %d", cp, pgReadEvents)
		}
		return nil, err
	}
	runPGAlternate(b, pgReadEvents, raw, run)
	if r := raw.rate(pgReadEvents); r > 0 {
		b.ReportMetric(run.rate(pgReadEvents)/r, "x_raw")
	}
}

// ---------------------------------------------------------------------
// The ordered ceiling and the BIGSERIAL floor.
//
// BenchmarkPostgresCeiling puts the store between two plain pgx programs
// writing the same events, in the same run, on schemas of their own:
//
//   - ceiling: what an ordered store could do at best. It keeps commit
//     order with the store's head-row lock (the commit counter moved and
//     the channel notified, BeginWriteSQL) and writes the same rows (the
//     events at the next positions and versions, the head row's move, a
//     new stream's streams row), with the cheapest statements known: one
//     statement per append (pgCeilingAppendSQL: the head row's move, the
//     stream's version, its streams row and its events from unnest
//     arrays, as writable CTEs), and one pipelined round trip per
//     transaction (BEGIN, the lock, the appends, COMMIT). Its appenders
//     share transactions as the store's do: a writer goroutine takes
//     every append waiting (at most rawMaxBatch) into one. It checks no
//     expected version and no reused id: the store does both.
//   - floor: what no ordered store can reach. One table with a BIGSERIAL
//     key and a unique (tenant, stream_id, version) index, one multi-row
//     INSERT (unnest arrays) per append in a transaction of its own, a
//     connection per appender: no head row, no commit order, no id check.
//     A follower reading it by key skips events.
//   - store: store.Append.
//
// x_ceiling = store / ceiling, x_floor = store / floor, ceiling_floor =
// ceiling / floor.
//
// Beside BenchmarkPostgresAppend's sides: head is the driver's own
// statements with one transaction per append and no group commit, so it
// is below the ceiling wherever several appenders could share a commit;
// seq is head without the head row (an identity column), a floor with
// the driver's statements, which the BIGSERIAL floor undercuts with one
// statement per append and no state read.

// pgCeilingAppendSQL is the ceiling's append: one statement, under the
// head-row lock its transaction took first.
const pgCeilingAppendSQL = `WITH h AS (UPDATE log_head SET position = position + $1 RETURNING position - $1 AS base),
	v AS (SELECT COALESCE(max(version), 0) AS cur FROM events WHERE tenant = $2 AND stream_id = $3),
	s AS (INSERT INTO streams (tenant, stream_id, created_at) VALUES ($2, $3, $4) ON CONFLICT DO NOTHING)
	INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time,
		content_type, data_schema, data, correlation_id, causation_id, recorded_at)
	SELECT h.base + u.i, $2, $3, v.cur + u.i, u.id, u.type, $5, $4, $6, '', u.data, '', '', $4
	FROM h, v, unnest($7::text[], $8::text[], $9::bytea[]) WITH ORDINALITY AS u (id, type, data, i)`

// pgFloorSQL makes the floor's table, and pgFloorInsertSQL is its
// append.
const (
	pgFloorSQL = `CREATE TABLE floor_events (
	id BIGSERIAL PRIMARY KEY, tenant TEXT NOT NULL, stream_id TEXT NOT NULL, version BIGINT NOT NULL,
	event_id TEXT NOT NULL, type TEXT NOT NULL, source TEXT NOT NULL, time BIGINT NOT NULL,
	content_type TEXT NOT NULL, data_schema TEXT NOT NULL, data BYTEA, correlation_id TEXT NOT NULL,
	causation_id TEXT NOT NULL, extensions TEXT, recorded_at BIGINT NOT NULL,
	UNIQUE (tenant, stream_id, version))`
	pgFloorInsertSQL = `INSERT INTO floor_events (tenant, stream_id, version, event_id, type, source, time,
		content_type, data_schema, data, correlation_id, causation_id, recorded_at)
	SELECT $1, $2, $3 + u.i, u.id, u.type, $5, $4, $6, '', u.data, '', '', $4
	FROM unnest($7::text[], $8::text[], $9::bytea[]) WITH ORDINALITY AS u (id, type, data, i)`
)

// pgCols splits events into the unnest arrays.
func pgCols(evs []rawEvent) (ids, types []string, data [][]byte) {
	ids, types, data = make([]string, len(evs)), make([]string, len(evs)), make([][]byte, len(evs))
	for i, e := range evs {
		ids[i], types[i], data[i] = e.ID, e.Type, e.Data
	}
	return ids, types, data
}

// pgCeiling is the ordered ceiling: appends queue to one writer
// goroutine on one connection, which runs each group of them as one
// pipelined transaction.
type pgCeiling struct {
	pool    *pgxpool.Pool
	channel string
	queue   chan *pgCeilReq
	done    chan struct{}
	// txs and appends count the transactions and the appends in them.
	txs, appends *atomic.Int64
}

type pgCeilReq struct {
	stream string
	evs    []rawEvent
	err    error
	done   chan struct{}
}

func openPGCeiling(ctx context.Context, addr string, warm []rawEvent, txs, appends *atomic.Int64) (*pgCeiling, error) {
	_, schema, err := pgSchemaOf(addr)
	if err != nil {
		return nil, err
	}
	c := &pgCeiling{channel: "eventlite_" + schema, queue: make(chan *pgCeilReq, rawMaxBatch), done: make(chan struct{})}
	c.pool, err = pgRawPool(ctx, addr, 1, nil)
	if err != nil {
		return nil, err
	}
	go c.run()
	if err := c.append(ctx, "warmup", warm, nil); err != nil {
		_ = c.Close()
		return nil, err
	}
	c.txs, c.appends = txs, appends
	return c, nil
}

func (c *pgCeiling) Close() error {
	close(c.queue)
	<-c.done
	c.pool.Close()
	return nil
}

func (c *pgCeiling) append(ctx context.Context, stream string, evs []rawEvent, _ []envelope.Event) error {
	r := &pgCeilReq{stream: stream, evs: evs, done: make(chan struct{})}
	c.queue <- r
	<-r.done
	return r.err
}

func (c *pgCeiling) run() {
	defer close(c.done)
	ctx := context.Background()
	group := make([]*pgCeilReq, 0, rawMaxBatch)
	for {
		r, ok := <-c.queue
		if !ok {
			return
		}
		group = append(group[:0], r)
	gather:
		for len(group) < rawMaxBatch {
			select {
			case r, ok := <-c.queue:
				if !ok {
					break gather
				}
				group = append(group, r)
			default:
				break gather
			}
		}
		err := c.commit(ctx, group)
		if c.txs != nil {
			c.txs.Add(1)
			c.appends.Add(int64(len(group)))
		}
		for _, r := range group {
			r.err = err
			close(r.done)
		}
	}
}

// commit runs group as one transaction in one round trip.
func (c *pgCeiling) commit(ctx context.Context, group []*pgCeilReq) error {
	now := time.Now().UnixNano()
	var b pgx.Batch
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(pgdriver.BeginWriteSQL, c.channel)
	for _, r := range group {
		ids, types, data := pgCols(r.evs)
		b.Queue(pgCeilingAppendSQL, int64(len(r.evs)), pgTenant, r.stream, now, rawSource, rawContentType, ids, types, data)
	}
	b.Queue("COMMIT")
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	err = conn.SendBatch(ctx, &b).Close()
	if err != nil {
		_, _ = conn.Exec(ctx, "ROLLBACK")
	}
	return err
}

// pgFloor is the BIGSERIAL floor: one INSERT per append on a pool of a
// connection per appender. It keeps each stream's version itself (each
// stream has one appender).
type pgFloor struct {
	pool     *pgxpool.Pool
	mu       sync.Mutex
	versions map[string]int64
}

// openPGFloor opens the floor on versions: each stream's newest version,
// kept from one chunk of a benchmark to the next.
func openPGFloor(ctx context.Context, addr string, conns int, versions map[string]int64, warm []rawEvent) (*pgFloor, error) {
	f := &pgFloor{versions: versions}
	var err error
	f.pool, err = pgRawPool(ctx, addr, conns, func(c *pgx.Conn) error {
		ids, types, data := pgCols(warm)
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, pgFloorInsertSQL, pgTenant, "warmup", int64(0), time.Now().UnixNano(), rawSource, rawContentType, ids, types, data)
		return err
	})
	return f, err
}

func (f *pgFloor) Close() error {
	f.pool.Close()
	return nil
}

func (f *pgFloor) append(ctx context.Context, stream string, evs []rawEvent, _ []envelope.Event) error {
	f.mu.Lock()
	v := f.versions[stream]
	f.versions[stream] = v + int64(len(evs))
	f.mu.Unlock()
	ids, types, data := pgCols(evs)
	_, err := f.pool.Exec(ctx, pgFloorInsertSQL, pgTenant, stream, v, time.Now().UnixNano(), rawSource, rawContentType, ids, types, data)
	return err
}

// pgBoundSide is a side of BenchmarkPostgresCeiling.
func pgBoundSide(name, addr string, conc, perTx int, seed uint64, txs, appends *atomic.Int64) *pgSide {
	l := &pgLocal{side: name, addr: addr, conc: conc, perTx: perTx, g: newBenchGen(seed)}
	versions := map[string]int64{}
	open := func(k int) error {
		if name == "store" {
			return l.open(k)
		}
		l.raw, l.evs = l.raw[:0], l.evs[:0]
		for range k {
			l.raw = append(l.raw, l.g.raw(l.perTx))
			l.evs = append(l.evs, nil)
		}
		var err error
		ctx := context.Background()
		if name == "ceiling" {
			l.a, err = openPGCeiling(ctx, addr, l.g.raw(l.perTx), txs, appends)
		} else {
			l.a, err = openPGFloor(ctx, addr, conc, versions, l.g.raw(l.perTx))
		}
		return err
	}
	return &pgSide{name: name, open: open, run: l.run, close: l.close}
}

// BenchmarkPostgresCeiling appends 1 or 100 events per append from 1 or
// 16 goroutines (one goroutine: 100 streams in turn; 16: a stream each):
// ceiling, floor and store (see above), in turns.
func BenchmarkPostgresCeiling(b *testing.B) {
	base := storetest.PostgresBase(b)
	for _, c := range []struct {
		perTx, conc, chunk int
	}{
		{1, 1, 200},
		{100, 1, 20},
		{1, 16, 20 * 16},
		{100, 16, 4 * 16},
	} {
		b.Run(fmt.Sprintf("events=%d/appenders=%d", c.perTx, c.conc), func(b *testing.B) {
			var (
				sides        []*pgSide
				txs, appends atomic.Int64
			)
			for _, name := range []string{"ceiling", "floor", "store"} {
				addr := pgSideSchema(b, base, "store")
				if name == "floor" {
					pool, err := pgRawPool(context.Background(), addr, 1, nil)
					if err != nil {
						b.Fatal(err)
					}
					_, err = pool.Exec(context.Background(), pgFloorSQL)
					pool.Close()
					if err != nil {
						b.Fatal(err)
					}
				}
				sides = append(sides, pgBoundSide(name, addr, c.conc, c.perTx, 7, &txs, &appends))
			}
			runPGPaired(b, c.chunk, sides...)
			ceiling, floor, st := sides[0], sides[1], sides[2]
			per := float64(c.perTx)
			for _, s := range sides {
				b.ReportMetric(s.rate(per), s.name+"_ev/s")
			}
			if r := ceiling.rate(per); r > 0 {
				b.ReportMetric(st.rate(per)/r, "x_ceiling")
			}
			if r := floor.rate(per); r > 0 {
				b.ReportMetric(st.rate(per)/r, "x_floor")
				b.ReportMetric(ceiling.rate(per)/r, "ceiling_floor")
			}
			if st.ops > 0 {
				b.ReportMetric(float64(st.dur.Nanoseconds())/float64(st.ops), "ns/op")
			}
			if n := txs.Load(); n > 0 {
				b.ReportMetric(float64(appends.Load())/float64(n), "ceiling_appends/tx")
			}
			reportLatency(b, "store_", st.lat)
		})
	}
}
