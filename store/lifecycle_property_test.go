package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// The lifecycle property test (issues 35 and 36): random sequences of
// append (plain and encrypted under a subject), forget, snapshot,
// backup, restore, scavenge, delete, truncate, relay publish, projection
// catch-up and scrub, one after another, with the invariants checked
// after every step:
//
//   - no position and no stream version is handed out twice: a position
//     or a (stream, version) once seen never names another event, and a
//     new append is above every position and version ever handed out,
//     restores included;
//   - the relay publishes only events that are in the log when it
//     publishes, and never a forgotten subject's data;
//   - a forgotten subject's events never decrypt again, restores of
//     backups taken before the forget included;
//   - after a scrub (and a projection catch-up that purged the read
//     model), no forgotten subject's plaintext is in the database file,
//     its WAL, or a backup taken then;
//   - CheckInvariants holds.
//
// EVENTLITE_SEED replays a sequence (the seed is printed); the length is
// set by steps, not by time. A long run:
//
//	EVENTLITE_PROPERTY_STEPS=5000 go test ./store -run TestLifecycleProperty -v
func TestLifecycleProperty(t *testing.T) {
	seed, steps := propertySeed(t, 500, 90)
	for run := range propertyRuns() {
		s := seed + uint64(run)
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			t.Logf("replay with EVENTLITE_SEED=%d EVENTLITE_PROPERTY_STEPS=%d", s, steps)
			m := newPropModel(t, s, "")
			for range steps {
				m.step()
			}
			t.Logf("steps: %v", m.counts)
		})
	}
}

// TestLifecyclePropertyPostgres is the same on PostgreSQL, without
// backup, restore and the byte search (the server's files are its own).
func TestLifecyclePropertyPostgres(t *testing.T) {
	base := storetest.PostgresBase(t)
	seed, steps := propertySeed(t, 300, 60)
	t.Logf("replay with EVENTLITE_SEED=%d EVENTLITE_PROPERTY_STEPS=%d", seed, steps)
	m := newPropModel(t, seed, storetest.PostgresSchema(t, base))
	for range steps {
		m.step()
	}
	t.Logf("steps: %v", m.counts)
}

// propertySeed reads EVENTLITE_SEED (default 35) and
// EVENTLITE_PROPERTY_STEPS (default full, or short under -short).
func propertySeed(t *testing.T, full, short int) (uint64, int) {
	seed := uint64(35)
	if v := os.Getenv("EVENTLITE_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("EVENTLITE_SEED=%q: %v", v, err)
		}
		seed = n
	}
	steps := full
	if testing.Short() {
		steps = short
	}
	if v := os.Getenv("EVENTLITE_PROPERTY_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("EVENTLITE_PROPERTY_STEPS=%q: %v", v, err)
		}
		steps = n
	}
	t.Logf("seed %d, %d steps", seed, steps)
	return seed, steps
}

// propertyRuns is how many seeds a plain run tries: one when replaying
// or under -short.
func propertyRuns() int {
	if testing.Short() || os.Getenv("EVENTLITE_SEED") != "" {
		return 1
	}
	return 2
}

var propSubjects = []string{"alice", "bob", "carol", "dave", "erin"}

type propBackup struct {
	path      string
	forgotten map[string]bool
}

type propModel struct {
	t     *testing.T
	ctx   context.Context
	rnd   *rand.Rand
	s     *store.Store
	file  bool // a SQLite file: backup, restore and the byte search
	path  string
	dir   string
	steps int

	posID  map[int64]string  // every position ever seen -> its event id
	verID  map[string]string // tenant/stream/version -> event id
	maxPos int64
	maxVer map[string]int64 // stream -> the highest version ever seen

	markers   map[string][]string // subject -> the plaintexts appended under it
	forgotten map[string]bool
	backups   []propBackup
	counts    map[string]int
	trace     []string // the steps so far, printed on a failure
	restored  bool     // a restore ran
}

func newPropModel(t *testing.T, seed uint64, pg string) *propModel {
	m := &propModel{t: t, ctx: context.Background(), rnd: rand.New(rand.NewPCG(seed, seed^0x5eed)),
		posID: map[int64]string{}, verID: map[string]string{}, maxVer: map[string]int64{},
		markers: map[string][]string{}, forgotten: map[string]bool{}, counts: map[string]int{}}
	opts := &store.Options{MasterKey: drivertest.MasterKey(t, seed)}
	m.dir = t.TempDir()
	if pg == "" {
		m.file = true
		m.path = filepath.Join(m.dir, "prop.db")
		m.s = storetest.MustOpenPath(t, m.path, opts)
	} else {
		s, err := store.Open(m.ctx, pg, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		m.s = s
	}
	return m
}

// step runs one random operation and checks the invariants.
func (m *propModel) step() {
	m.steps++
	type op struct {
		name   string
		weight int
		file   bool
		run    func()
	}
	ops := []op{
		{"append", 8, false, m.appendPlain},
		{"append-subject", 6, false, m.appendSubject},
		{"forget", 2, false, m.forget},
		{"snapshot", 2, false, m.snapshot},
		{"relay", 3, false, m.relay},
		{"project", 2, false, func() { applyReadModel(m.t, m.s) }},
		{"scavenge", 2, false, m.scavenge},
		{"delete", propDeletes(), false, m.delete},
		{"truncate", 2, false, m.truncate},
		{"scrub", 1, true, m.scrub},
		{"backup", 2, true, m.backup},
		{"restore", 2, true, m.restore},
	}
	total := 0
	for _, o := range ops {
		if !o.file || m.file {
			total += o.weight
		}
	}
	n := m.rnd.IntN(total)
	for _, o := range ops {
		if o.file && !m.file {
			continue
		}
		if n < o.weight {
			m.counts[o.name]++
			m.trace = append(m.trace, o.name)
			o.run()
			m.check(o.name)
			return
		}
		n -= o.weight
	}
}

func (m *propModel) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Logf("steps: %s", strings.Join(m.trace, " "))
	m.t.Fatalf("step %d: "+format, append([]any{m.steps}, args...)...)
}

// appended checks an append's result: above every position and version
// ever handed out.
func (m *propModel) appended(stream string, res store.AppendResult) {
	m.t.Helper()
	for _, e := range res.Events {
		if e.Position <= m.maxPos {
			m.fatalf("append to %s got position %d; %d was handed out before", stream, e.Position, m.maxPos)
		}
		if e.StreamVersion <= m.maxVer[stream] {
			m.fatalf("append to %s got version %d; %d was handed out before", stream, e.StreamVersion, m.maxVer[stream])
		}
		m.see(e)
	}
}

// see records an event's position and version, and fails when either
// named another event before.
func (m *propModel) see(e envelope.Event) {
	m.t.Helper()
	if id, ok := m.posID[e.Position]; ok && id != e.ID {
		m.fatalf("position %d names event %s, and named %s before: handed out twice", e.Position, e.ID, id)
	}
	m.posID[e.Position] = e.ID
	k := e.Stream + "/" + strconv.FormatInt(e.StreamVersion, 10)
	if id, ok := m.verID[k]; ok && id != e.ID {
		m.fatalf("version %d of %s names event %s, and named %s before: handed out twice", e.StreamVersion, e.Stream, e.ID, id)
	}
	m.verID[k] = e.ID
	m.maxPos = max(m.maxPos, e.Position)
	m.maxVer[e.Stream] = max(m.maxVer[e.Stream], e.StreamVersion)
}

func (m *propModel) appendPlain() {
	stream := fmt.Sprintf("order-%d", m.rnd.IntN(4))
	evs := make([]envelope.Event, 1+m.rnd.IntN(3))
	for i := range evs {
		evs[i] = drivertest.Event(m.t, "order.noted", map[string]int{"n": m.rnd.IntN(1000)})
	}
	res, err := m.s.Append(m.ctx, "default", stream, store.Any, evs...)
	if errors.Is(err, store.ErrStreamDeleted) {
		return
	}
	if err != nil {
		m.fatalf("append to %s: %v", stream, err)
	}
	m.appended(stream, res)
}

func (m *propModel) appendSubject() {
	subject := propSubjects[m.rnd.IntN(len(propSubjects))]
	m.trace[len(m.trace)-1] += ":" + subject
	stream := "user-" + subject
	marker := fmt.Sprintf("%s-%d.px35@example.org", subject, m.steps)
	res, err := m.s.Append(m.ctx, "default", stream, store.Any, drivertest.Personal(m.t, subject, marker))
	if errors.Is(err, store.ErrBusy) && m.restored {
		// The key this process cached was the replaced file's: the
		// append stored nothing and says to retry.
		res, err = m.s.Append(m.ctx, "default", stream, store.Any, drivertest.Personal(m.t, subject, marker))
	}
	if m.forgotten[subject] {
		if !errors.Is(err, store.ErrInvalidEvent) && !errors.Is(err, store.ErrStreamDeleted) {
			m.fatalf("an append under %s, forgotten: %v; want it refused", subject, err)
		}
		return
	}
	if errors.Is(err, store.ErrStreamDeleted) {
		return
	}
	if err != nil {
		m.fatalf("append under %s: %v", subject, err)
	}
	m.markers[subject] = append(m.markers[subject], marker)
	m.appended(stream, res)
}

func (m *propModel) forget() {
	subject := propSubjects[m.rnd.IntN(len(propSubjects))]
	m.trace[len(m.trace)-1] += ":" + subject
	res, err := erasure.For(m.s).Forget(m.ctx, "default", subject)
	if err != nil {
		m.fatalf("forget %s: %v", subject, err)
	}
	if res.Already != m.forgotten[subject] {
		m.fatalf("forget %s: already %v, the model says %v", subject, res.Already, m.forgotten[subject])
	}
	m.forgotten[subject] = true
	if !res.Already {
		m.see(res.Event)
	}
}

func (m *propModel) snapshot() {
	subject := propSubjects[m.rnd.IntN(len(propSubjects))]
	if m.forgotten[subject] || len(m.markers[subject]) == 0 {
		return
	}
	// A snapshot derives from the stream's events: only a stream that
	// holds one of the subject's (a restore may have taken them all
	// back) gets the subject's data in its snapshot.
	holds := false
	for e, err := range m.s.ReadStream(m.ctx, "default", "user-"+subject, store.ReadStreamOptions{}) {
		if err != nil {
			break
		}
		holds = holds || erasureKey(e) == subject
	}
	if !holds {
		return
	}
	marker := m.markers[subject][len(m.markers[subject])-1]
	err := m.s.Update(m.ctx, func(tx *store.Tx) error {
		return tx.SaveSnapshot(m.ctx, store.Snapshot{Tenant: "default", Stream: "user-" + subject, SchemaVersion: 1, Version: m.maxVer["user-"+subject],
			State: []byte(`{"email":"` + marker + `"}`)})
	})
	if err != nil && !errors.Is(err, store.ErrInvalidEvent) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrStreamDeleted) {
		m.fatalf("snapshot of %s: %v", subject, err)
	}
}

// propSink records what the relay publishes and checks each message
// against the log as it was read before the relay ran.
type propSink struct {
	m   *propModel
	log map[int64]string // position -> id in the log
	mu  sync.Mutex
	bad []string
}

func (p *propSink) Publish(ctx context.Context, msgs []publish.Message) []publish.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, msg := range msgs {
		e := msg.Event
		if id, ok := p.log[e.Position]; !ok || id != e.ID {
			p.bad = append(p.bad, fmt.Sprintf("published position %d (event %s), which is not in the log", e.Position, e.ID))
		}
		if k := erasureKey(e); k != "" && p.m.forgotten[k] && (e.Data != nil || !envelope.Erased(e)) {
			p.bad = append(p.bad, fmt.Sprintf("published event %s of forgotten subject %s with data %s", e.ID, k, e.Data))
		}
	}
	return make([]publish.Result, len(msgs))
}

func (p *propSink) Ping(context.Context) error { return nil }
func (p *propSink) Close() error               { return nil }

func (m *propModel) relay() {
	sink := &propSink{m: m, log: map[int64]string{}}
	for _, e := range m.readLog() {
		sink.log[e.Position] = e.ID
	}
	r, err := publish.New(publish.Options{Store: m.s, Publisher: sink, Once: true, LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond})
	if err != nil {
		m.fatalf("relay: %v", err)
	}
	ctx, cancel := context.WithTimeout(m.ctx, time.Minute)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		m.fatalf("relay: %v", err)
	}
	_ = r.Close()
	if len(sink.bad) > 0 {
		m.fatalf("the relay: %s", strings.Join(sink.bad, "; "))
	}
}

func (m *propModel) scavenge() {
	vacuum := m.file && m.rnd.IntN(4) == 0
	if _, err := lifecycle.For(m.s).Scavenge(m.ctx, lifecycle.ScavengeOptions{Vacuum: vacuum}); err != nil && !errors.Is(err, store.ErrBusy) {
		m.fatalf("scavenge (vacuum %v): %v", vacuum, err)
	}
}

func (m *propModel) delete() {
	stream := fmt.Sprintf("order-%d", m.rnd.IntN(4))
	if m.rnd.IntN(2) == 0 {
		stream = "user-" + propSubjects[m.rnd.IntN(len(propSubjects))]
	}
	hard := m.rnd.IntN(3) == 0
	m.trace[len(m.trace)-1] += fmt.Sprintf(":%s:hard=%v", stream, hard)
	_, err := lifecycle.For(m.s).Delete(m.ctx, "default", stream, lifecycle.DeleteOptions{Hard: hard})
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrStreamDeleted) {
		m.fatalf("delete %s: %v", stream, err)
	}
}

func (m *propModel) truncate() {
	stream := fmt.Sprintf("order-%d", m.rnd.IntN(4))
	v := m.maxVer[stream]
	if v < 2 {
		return
	}
	_, err := lifecycle.For(m.s).Truncate(m.ctx, "default", stream, 1+m.rnd.Int64N(v), store.Any)
	if err != nil && !errors.Is(err, store.ErrInvalidEvent) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrStreamDeleted) {
		m.fatalf("truncate %s: %v", stream, err)
	}
}

// scrub catches the read model up (it purges forgotten subjects),
// scrubs, and searches the file, its WAL and a new backup for every
// forgotten subject's plaintext.
func (m *propModel) scrub() {
	applyReadModel(m.t, m.s)
	res, err := erasure.For(m.s).Scrub(m.ctx)
	if err != nil {
		m.fatalf("scrub: %v", err)
	}
	if !res.Checkpointed {
		return
	}
	after := filepath.Join(m.dir, fmt.Sprintf("scrubbed-%d.db", m.steps))
	if _, err := backup.Create(m.ctx, m.path, after, nil); err != nil {
		m.fatalf("backup: %v", err)
	}
	defer os.Remove(after)
	files := [][]byte{rawFileBytes(m.t, m.path), rawFileBytes(m.t, m.path+"-wal"), rawFileBytes(m.t, after)}
	for subject := range m.forgotten {
		for _, marker := range m.markers[subject] {
			for i, b := range files {
				if bytes.Contains(b, []byte(marker)) {
					m.fatalf("after forget and scrub, %s's plaintext %q is in %s", subject, marker, []string{"the file", "its WAL", "a backup taken then"}[i])
				}
			}
		}
	}
}

func (m *propModel) backup() {
	p := filepath.Join(m.dir, fmt.Sprintf("backup-%d.db", m.steps))
	m.trace[len(m.trace)-1] += fmt.Sprintf(":%d", m.steps)
	if _, err := backup.Create(m.ctx, m.path, p, nil); err != nil {
		m.fatalf("backup: %v", err)
	}
	m.backups = append(m.backups, propBackup{path: p, forgotten: copySet(m.forgotten)})
}

func copySet(in map[string]bool) map[string]bool {
	out := make(map[string]bool, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func (m *propModel) restore() {
	if len(m.backups) == 0 {
		return
	}
	b := m.backups[m.rnd.IntN(len(m.backups))]
	m.trace[len(m.trace)-1] += ":" + filepath.Base(b.path)
	var back []string
	for subject := range m.forgotten {
		if !b.forgotten[subject] {
			back = append(back, subject)
		}
	}
	slices.Sort(back)
	head, err := m.s.Head(m.ctx)
	if err != nil {
		m.fatalf("head: %v", err)
	}
	_, err = backup.Restore(m.ctx, b.path, m.path, &backup.RestoreOptions{Force: true})
	switch {
	case len(back) > 0 && !errors.Is(err, backup.ErrUnforget):
		m.fatalf("restore of %s, taken before %v were forgotten: %v; want ErrUnforget", filepath.Base(b.path), back, err)
	case len(back) > 0:
		if h, _ := m.s.Head(m.ctx); h != head {
			m.fatalf("a refused restore changed the head from %d to %d", head, h)
		}
	case err != nil:
		m.fatalf("restore of %s: %v", filepath.Base(b.path), err)
	}
	if err == nil {
		m.restored = true
	}
	if len(back) == 0 {
		return
	}
	res, err := backup.Restore(m.ctx, b.path, m.path, &backup.RestoreOptions{Force: true, ReapplyForgets: true})
	m.restored = true
	if err != nil {
		m.fatalf("restore --reapply-forgets of %s: %v", filepath.Base(b.path), err)
	}
	var got []string
	for _, f := range res.Reforgotten {
		got = append(got, f.Subject)
	}
	// The backup may hold a subject forgotten later as unknown (no key,
	// no tombstone): it is forgotten again all the same.
	if !slices.Equal(got, back) {
		m.fatalf("restore forgot %v again, want %v", got, back)
	}
}

// propDeletes is the weight of stream deletes, soft and hard.
func propDeletes() int { return 1 }

// readLog reads every event of the log, erased ones included.
func (m *propModel) readLog() []envelope.Event {
	m.t.Helper()
	var out []envelope.Event
	for e, err := range m.s.ReadAll(m.ctx, store.ReadAllOptions{}) {
		if err != nil {
			m.fatalf("read the log: %v", err)
		}
		out = append(out, e)
	}
	return out
}

// check runs after every step.
func (m *propModel) check(op string) {
	m.t.Helper()
	if err := m.s.CheckInvariants(m.ctx); err != nil {
		if fs, derr := m.s.Diagnose(m.ctx, store.DiagnoseOptions{}); derr == nil {
			for _, f := range fs {
				m.t.Logf("doctor: %s %s %v", f.Severity, f.Kind, f.IDs)
			}
		}
		m.fatalf("after %s: %v", op, err)
	}
	for _, e := range m.readLog() {
		m.see(e)
		if k := erasureKey(e); k != "" && m.forgotten[k] && (e.Data != nil || !envelope.Erased(e)) {
			m.fatalf("after %s: event %s of forgotten subject %s reads with data %s", op, e.ID, k, e.Data)
		}
	}
}
