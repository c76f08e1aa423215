package scenario

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// SeedEnv names the variable that fixes the seed of a consumer scenario's
// shuffled runs, to replay a failure: EVENTLITE_SEED=<the seed printed>.
const SeedEnv = "EVENTLITE_SEED"

// Env is what a consumer scenario hands the function that builds the
// consumer, once per run: a fresh store, a fresh directory, and the run's
// clock (the consumer's Now; it moves only when the kit sweeps).
type Env struct {
	Store *store.Store
	Dir   string
	Now   func() time.Time
}

// Delivery is an outside event as a broker delivers it: the version of
// its aggregate's stream and its data, a value of a registered Go type (or
// an envelope.Event in stored form). ID defaults to "<stream>-v<version>"
// (prefixed by the tenant when it is not "default"); give two deliveries
// of one version different IDs to make a version conflict.
type Delivery struct {
	Tenant  string // default "default"
	Stream  string
	Version int64
	ID      string
	Data    any
}

// At is a Delivery of data as version of stream, in the default tenant.
func At(stream string, version int64, data any) Delivery {
	return Delivery{Stream: stream, Version: version, Data: data}
}

// ConsumerScenario is given a sequence of outside events, then the read
// model. It runs the sequence in order, then Runs more times shuffled
// (seeded), with duplicates, and with deliveries whose transaction fails
// after the consumer's Apply returned (the broker delivers them again),
// each run on a fresh store, and requires every run to leave the same read
// model and the same quarantined events. Build it with Consumer; end it
// with ThenRows or ThenRowsFrom.
type ConsumerScenario struct {
	t           T
	reg         *envelope.Registry
	build       func(Env) projection.ConsumerOptions
	schema      []string
	given       []Delivery
	quarantined []string
	runs        int
	seed        uint64
	seeded      bool
	firstSeen   bool // the consumer starts at the first version seen: keep the order
}

// Consumer starts a scenario of the consumer build returns for each run's
// Env; reg encodes the given events. The kit sets the options' Now to the
// run's clock.
func Consumer(t T, reg *envelope.Registry, build func(Env) projection.ConsumerOptions) *ConsumerScenario {
	runs := 8
	if flag.Lookup("test.short") != nil && testing.Short() {
		runs = 3
	}
	return &ConsumerScenario{t: t, reg: reg, build: build, runs: runs}
}

// Schema is DDL run on each run's store before the first delivery: the
// consumer's read-model tables.
func (c *ConsumerScenario) Schema(ddl ...string) *ConsumerScenario {
	c.schema = append(c.schema, ddl...)
	return c
}

// Given is the sequence, in the order a well-behaved broker would deliver
// it.
func (c *ConsumerScenario) Given(deliveries ...Delivery) *ConsumerScenario {
	c.given = append(c.given, deliveries...)
	return c
}

// Quarantined are the ids of the deliveries the consumer must have
// quarantined once the kit moved the clock past DeferFor and swept
// (a version gap that never filled). Default: none.
func (c *ConsumerScenario) Quarantined(ids ...string) *ConsumerScenario {
	c.quarantined = append(c.quarantined, ids...)
	return c
}

// Runs sets how many shuffled runs follow the in-order one. Default 8 (3
// under go test -short).
func (c *ConsumerScenario) Runs(n int) *ConsumerScenario {
	c.runs = n
	return c
}

// Seed fixes the shuffled runs' seed. Default: EVENTLITE_SEED when set,
// else a random seed, printed (Logf) and named in every failure.
func (c *ConsumerScenario) Seed(seed uint64) *ConsumerScenario {
	c.seed, c.seeded = seed, true
	return c
}

// ThenRows runs the scenario and requires query, on the store's read
// model after every run, to return rows, in order.
func (c *ConsumerScenario) ThenRows(q string, rows ...Row) {
	c.t.Helper()
	c.ThenRowsFrom(func(ctx context.Context, env Env) ([]string, []Row, error) {
		return query(ctx, env.Store, q)
	}, rows...)
}

// ThenRowsFrom is ThenRows with a read model read by read (one that lives
// outside the store, say): its column names and rows, in order.
func (c *ConsumerScenario) ThenRowsFrom(read func(ctx context.Context, env Env) ([]string, []Row, error), rows ...Row) {
	c.t.Helper()
	want := make([]Row, len(rows))
	for i, r := range rows {
		want[i] = normalize(r)
	}
	seed, err := c.pickSeed()
	if err != nil {
		c.t.Fatalf("scenario %s: %v", c.t.Name(), err)
		return
	}
	if l, ok := c.t.(logger); ok && c.runs > 0 {
		l.Logf("scenario %s: seed %d (%s=%d to replay)", c.t.Name(), seed, SeedEnv, seed)
	}
	events, err := c.envelopes()
	if err != nil {
		c.t.Fatalf("scenario %s: %v", c.t.Name(), err)
		return
	}
	wantQ := slices.Clone(c.quarantined)
	slices.Sort(wantQ)
	es := engines()
	for _, e := range es {
		rng := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		for i := 0; i <= c.runs; i++ {
			var plan plan
			what := fmt.Sprintf("consumer given %s in order", countEvents(len(events)))
			if i == 0 {
				plan = inOrder(events)
			} else {
				plan = c.shuffle(rng, events)
				what = fmt.Sprintf("consumer, shuffled run %d of %d (seed %d; %s=%d replays): delivered %s", i, c.runs, seed, SeedEnv, seed, describePlan(plan))
			}
			r := &run{t: c.t, engine: e.name, both: len(es) > 1, what: what}
			c.once(r, e, plan, read, want, wantQ)
			failed := len(r.fails) > 0
			r.report()
			if failed {
				break // one failing order is enough to read
			}
		}
	}
}

func (c *ConsumerScenario) pickSeed() (uint64, error) {
	if c.seeded {
		return c.seed, nil
	}
	if v := os.Getenv(SeedEnv); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s=%q: not an unsigned integer", SeedEnv, v)
		}
		return s, nil
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]) >> 1, nil
}

// envelopes encodes the given deliveries.
func (c *ConsumerScenario) envelopes() ([]envelope.Event, error) {
	out := make([]envelope.Event, len(c.given))
	for i, d := range c.given {
		if d.Tenant == "" {
			d.Tenant = "default"
		}
		if d.Stream == "" || d.Version < 1 {
			return nil, fmt.Errorf("given delivery %d: Stream and Version (from 1) are required", i+1)
		}
		id := d.ID
		if id == "" {
			id = d.Stream + "-v" + strconv.FormatInt(d.Version, 10)
			if d.Tenant != "default" {
				id = d.Tenant + "-" + id
			}
		}
		ev, err := envelopeOf(c.reg, asEvent(d.Data, d.Tenant, d.Stream))
		if err != nil {
			return nil, fmt.Errorf("given delivery %d: %w", i+1, err)
		}
		ev.ID, ev.Tenant, ev.Stream, ev.StreamVersion = id, d.Tenant, d.Stream, d.Version
		ev.Time = clockStart
		out[i] = ev
	}
	return out, nil
}

// delivery is one Handle call of a run; dup marks a duplicate.
type delivery struct {
	e   envelope.Event
	dup bool
}

// plan is one run's deliveries, and the events whose first application
// the kit fails after Apply returned: the consumer's transaction rolls
// back and the broker delivers the event that was being handled again.
type plan struct {
	deliveries []delivery
	failAfter  map[string]bool
}

func inOrder(events []envelope.Event) plan {
	out := make([]delivery, len(events))
	for i, e := range events {
		out[i] = delivery{e: e}
	}
	return plan{deliveries: out}
}

// shuffle returns a seeded delivery order: shuffled (unless the order is
// the point: StartAtFirstSeen), events of one version kept in their given
// order (which one wins a version conflict depends on it), about a third
// delivered twice, and about a third (at least one) failing once after
// Apply.
func (c *ConsumerScenario) shuffle(rng *mrand.Rand, events []envelope.Event) plan {
	idx := make([]int, len(events))
	for i := range idx {
		idx[i] = i
	}
	if !c.firstSeen {
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		// Same version, several events: keep their given order among
		// the places the shuffle gave them.
		key := func(e envelope.Event) string {
			return e.Tenant + "\x00" + e.Stream + "\x00" + strconv.FormatInt(e.StreamVersion, 10)
		}
		groups := map[string][]int{}
		for _, k := range idx {
			groups[key(events[k])] = append(groups[key(events[k])], k)
		}
		for p, k := range idx {
			if g := groups[key(events[k])]; len(g) > 1 || (len(g) == 1 && g[0] != k) {
				slices.Sort(g)
				idx[p], groups[key(events[k])] = g[0], g[1:]
			}
		}
	}
	pl := plan{failAfter: map[string]bool{}}
	for _, k := range idx {
		pl.deliveries = append(pl.deliveries, delivery{e: events[k]})
		if rng.IntN(3) == 0 {
			pl.failAfter[events[k].ID] = true
		}
	}
	if len(pl.failAfter) == 0 && len(events) > 0 {
		pl.failAfter[events[rng.IntN(len(events))].ID] = true
	}
	for _, k := range idx {
		if rng.IntN(3) != 0 {
			continue
		}
		// A duplicate comes after its original, anywhere later.
		at := slices.IndexFunc(pl.deliveries, func(d delivery) bool { return d.e.ID == events[k].ID && !d.dup })
		pos := at + 1 + rng.IntN(len(pl.deliveries)-at)
		pl.deliveries = slices.Insert(pl.deliveries, pos, delivery{e: events[k], dup: true})
	}
	return pl
}

func describePlan(pl plan) string {
	parts := make([]string, len(pl.deliveries))
	for i, d := range pl.deliveries {
		parts[i] = d.e.ID
		if d.dup {
			parts[i] += " (again)"
		}
	}
	fails := make([]string, 0, len(pl.failAfter))
	for id := range pl.failAfter {
		fails = append(fails, id)
	}
	slices.Sort(fails)
	return strings.Join(parts, ", ") + "; the transaction that first applied " + strings.Join(fails, ", ") + " failed after Apply returned"
}

// errInjected is the fault the kit injects after Apply returned: the
// consumer's transaction rolls back, as if the process died before
// committing, and the broker delivers the event again.
var errInjected = errors.New("scenario: transaction failed after Apply (injected)")

// clock is a run's fake clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

var clockStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// once is one run on a fresh store.
func (c *ConsumerScenario) once(r *run, eng engine, pl plan, read func(context.Context, Env) ([]string, []Row, error), want []Row, wantQ []string) {
	r.t.Helper()
	ctx, cancel := scenarioContext()
	defer cancel()
	s, closeStore, err := eng.open(ctx, r.t)
	if err != nil {
		r.fatal("open a store: %v", err)
		return
	}
	defer func() {
		if err := closeStore(); err != nil {
			r.failf("close the store: %v", err)
		}
	}()
	for _, ddl := range c.schema {
		if err := s.Update(ctx, func(tx *store.Tx) error {
			_, err := tx.ExecContext(ctx, ddl)
			return err
		}); err != nil {
			r.fatal("schema: %v", err)
			return
		}
	}
	clk := &clock{now: clockStart}
	dir, err := os.MkdirTemp(r.t.TempDir(), "run-")
	if err != nil {
		r.fatal("a directory for the run: %v", err)
		return
	}
	env := Env{Store: s, Dir: dir, Now: clk.Now}
	opts := c.build(env)
	opts.Now = clk.Now
	c.firstSeen = opts.StartAtFirstSeen
	apply := opts.Apply
	failed := map[string]bool{}
	if apply != nil {
		opts.Apply = func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
			if err := apply(ctx, tx, e); err != nil {
				return err
			}
			if pl.failAfter[e.ID] && !failed[e.ID] {
				failed[e.ID] = true
				return errInjected
			}
			return nil
		}
	}
	cons, err := projection.NewConsumer(s, opts)
	if err != nil {
		r.fatal("build the consumer: %v", err)
		return
	}
	for _, d := range pl.deliveries {
		_, err := cons.Handle(ctx, d.e)
		for errors.Is(err, errInjected) {
			_, err = cons.Handle(ctx, d.e) // the broker's redelivery
		}
		if err != nil {
			r.failf("delivering %s: %v", d.e.ID, err)
			return
		}
	}
	deferFor := opts.DeferFor
	if deferFor == 0 {
		deferFor = 10 * time.Minute
	}
	clk.advance(deferFor + time.Second)
	if _, err := cons.Sweep(ctx); err != nil {
		r.fatal("sweep: %v", err)
		return
	}
	cols, got, err := read(ctx, env)
	if err != nil {
		r.fatal("read the read model: %v", err)
		return
	}
	if d := diffRows(cols, want, got); d != "" {
		r.failf("read model:\n%s", indent(d, "  "))
	}
	open, err := projection.Quarantine(s).Open(ctx, opts.Name)
	if err != nil {
		r.fatal("list the quarantine: %v", err)
		return
	}
	var gotQ []string
	for _, q := range open {
		gotQ = append(gotQ, q.EventID)
	}
	slices.Sort(gotQ)
	if !slices.Equal(gotQ, wantQ) {
		r.failf("quarantined: expected %v, got %v", quoted(wantQ), quoted(gotQ))
	}
}

func quoted(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return "[" + strings.Join(ids, ", ") + "]"
}
