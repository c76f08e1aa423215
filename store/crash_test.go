package store_test

import (
	"context"
	"encoding/json"
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

	"github.com/eventlite/eventlite/store"
)

// What a crash child does (EVENTLITE_CRASH_MODE).
const (
	// crashSerial: one goroutine appends single events and batches of up
	// to 5, exact expected versions on its own streams, Any on shared ones.
	crashSerial = "serial"
	// crashGroup: four goroutines append at once, so appends share
	// transactions (group commit, a savepoint each).
	crashGroup = "group"
	// crashBig: one goroutine appends large batches with exact expected
	// versions; the kill lands in the middle of a long transaction.
	crashBig = "big"
)

const (
	crashOwnStreams = 4
	// crashMaxAppends bounds a child that is never killed.
	crashMaxAppends = 100_000
)

// crashOwnStream names own stream k. Only one goroutine of one child
// appends to it at a time, so it can append with exact expected versions.
func crashOwnStream(k int) (tenant, stream string) {
	return []string{"default", "acme"}[k%2], fmt.Sprintf("own-%d", k)
}

// helperCrash is the crash child: it opens the file (recovering it after
// the previous child's kill), retries the appends to own streams that the
// previous child left in flight (EVENTLITE_RETRY), then appends until it
// is killed, printing TRY before and ACK after every Append.
func helperCrash() {
	ctx := context.Background()
	child := int(helperInt(envChild))
	s, err := store.Open(ctx, os.Getenv(envDB), nil)
	if err != nil {
		helperFail("open: %v", err)
	}
	helperEmit("READY", nil)
	if p := os.Getenv(envRetry); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			helperFail("%v", err)
		}
		var retries []*procMsg
		if err := json.Unmarshal(b, &retries); err != nil {
			helperFail("%s: %v", p, err)
		}
		for _, m := range retries {
			m.Child, m.Worker, m.Retry = child, -1, true
			helperEmit("TRY", m)
			// The same ids, type, data and expected version: if the
			// first try committed, this returns its result.
			res, err := s.Append(ctx, m.Tenant, m.Stream, m.expected(), m.envelopes()...)
			if err != nil {
				helperFail("retry of %s: %v", m.key(), err)
			}
			helperEmit("ACK", crashAck(m, res))
		}
	}
	versions := make([]int64, crashOwnStreams)
	for k := range versions {
		tenant, stream := crashOwnStream(k)
		if versions[k], err = s.StreamVersion(ctx, tenant, stream); err != nil {
			helperFail("stream version: %v", err)
		}
	}
	all := []int{0, 1, 2, 3}
	var wg sync.WaitGroup
	switch mode := os.Getenv(envCrashMode); mode {
	case crashSerial:
		wg.Go(func() { crashWorker(s, child, 0, all, versions, 0) })
	case crashGroup:
		for w := range crashOwnStreams {
			wg.Go(func() { crashWorker(s, child, w, []int{w}, versions, 0) })
		}
	case crashBig:
		batch := int(helperInt(envBigBatch))
		wg.Go(func() { crashWorker(s, child, 0, all, versions, batch) })
	default:
		helperFail("unknown %s %q", envCrashMode, mode)
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		helperFail("close: %v", err)
	}
	helperEmit("DONE", nil)
}

// crashWorker appends in a loop. own are the own streams it may use (no
// other goroutine uses them); versions[k] is own stream k's version.
// With batch > 0 every append is a batch of that many events to an own
// stream; else half go to own streams (1-5 events), half to shared ones
// with Any (1-3 events).
func crashWorker(s *store.Store, child, w int, own []int, versions []int64, batch int) {
	ctx := context.Background()
	r := helperRand(w)
	for i := range crashMaxAppends {
		m := &procMsg{Child: child, Worker: w, Expected: -1}
		k := -1
		var size int
		switch {
		case batch > 0:
			k, size = own[r.IntN(len(own))], batch
		case r.IntN(2) == 0:
			k, size = own[r.IntN(len(own))], 1+r.IntN(5)
		default:
			m.Tenant, m.Stream, size = "default", fmt.Sprintf("shared-%d", r.IntN(3)), 1+r.IntN(3)
		}
		if k >= 0 {
			m.Tenant, m.Stream = crashOwnStream(k)
			m.Expected = versions[k]
		}
		for j := range size {
			m.Events = append(m.Events, procMsgEvent{
				ID:   fmt.Sprintf("k%d-w%d-%d-%d", child, w, i, j),
				Type: "crash.appended",
				Data: fmt.Appendf(nil, `{"child":%d,"i":%d,"j":%d}`, child, i, j),
			})
		}
		helperEmit("TRY", m)
		res, err := s.Append(ctx, m.Tenant, m.Stream, m.expected(), m.envelopes()...)
		if err != nil {
			helperFail("append %s to %s/%s: %v", m.key(), m.Tenant, m.Stream, err)
		}
		if k >= 0 {
			versions[k] = res.Version
		}
		helperEmit("ACK", crashAck(m, res))
	}
}

// crashAck is the ACK message for a tried append and its result.
func crashAck(m *procMsg, res store.AppendResult) *procMsg {
	a := *m
	a.Version = res.Version
	a.Events = make([]procMsgEvent, len(res.Events))
	for i, e := range res.Events {
		a.Events[i] = procMsgEvent{ID: e.ID, Position: e.Position, Version: e.StreamVersion}
	}
	return &a
}

// TestCrashKill9 kills appending child processes with SIGKILL at random
// moments, over and over on one file, and after every kill reopens the
// file and checks: no acknowledged append lost or moved, positions 1..head
// without a hole, an append in flight at the kill either whole or absent,
// one outbox row per event, versions 1..n per stream, integrity_check ok.
// The next child first retries the previous one's in-flight appends to
// its own streams with the same ids: a retry of a committed append returns
// the first result.
func TestCrashKill9(t *testing.T) {
	kills, maxAcks, bigBatch := 100, 40, 500
	if testing.Short() {
		kills, maxAcks, bigBatch = 5, 6, 100
	}
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x9))
	start := time.Now()
	dir := t.TempDir()
	path := filepath.Join(dir, "crash.db")
	l := newProcLedger()
	modes, moments := map[string]int{}, map[string]int{}
	var committed, absent, partial int
	for round := range kills {
		mode := []string{crashSerial, crashSerial, crashGroup, crashGroup, crashBig}[rng.IntN(5)]
		// When to kill: at once (the child is starting, opening or
		// recovering the file), when it reports the store open, or after
		// a random number of acknowledged appends and then 0-3 more
		// lines of any kind.
		moment := "acks"
		switch rng.IntN(20) {
		case 0:
			moment = "start"
		case 1:
			moment = "ready"
		}
		target, extra := 1+rng.IntN(maxAcks), rng.IntN(4)
		if mode == crashBig {
			target = 1
		}
		modes[mode]++
		moments[moment]++

		env := []string{envDB + "=" + path, envChild + "=" + strconv.Itoa(round), envCrashMode + "=" + mode,
			envChildSeed + "=" + strconv.FormatUint(rng.Uint64(), 10), envBigBatch + "=" + strconv.Itoa(bigBatch)}
		var retry []*procMsg
		for _, m := range l.tried {
			if m.Expected >= 0 {
				retry = append(retry, m)
			}
		}
		if len(retry) > 0 {
			slices.SortFunc(retry, func(a, b *procMsg) int { return strings.Compare(a.key(), b.key()) })
			b, err := json.Marshal(retry)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, fmt.Sprintf("retry-%d.json", round))
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			env = append(env, envRetry+"="+p)
		}

		c := startProcChild(t, "crash", env...)
		killed := false
		kill := func() {
			if !killed {
				if err := c.cmd.Process.Kill(); err != nil {
					t.Fatalf("kill: %v", err)
				}
				killed = true
			}
		}
		if moment == "start" {
			kill()
		}
		acks, remaining := 0, -1
		for {
			line, ok := procNextLine(t, c)
			if !ok {
				break
			}
			// Lines read after the kill were written before it: their
			// appends are acknowledged all the same.
			kind, m := procParse(t, line)
			switch kind {
			case "TRY":
				l.try(m)
			case "ACK":
				l.ack(t, m)
				acks++
			case "READY":
			default:
				t.Errorf("round %d: unexpected line %q", round, line)
			}
			if killed {
				continue
			}
			switch moment {
			case "ready":
				if kind == "READY" {
					kill()
				}
			case "acks":
				if remaining < 0 && kind == "ACK" && acks >= target {
					remaining = extra
				} else if remaining > 0 {
					remaining--
				}
				if remaining == 0 {
					kill()
				}
			}
		}
		err := c.wait()
		if !killed || c.cmd.ProcessState.Exited() {
			t.Fatalf("round %d: the child ended by itself (%v) before it was killed; stderr:\n%s", round, err, c.stderr.String())
		}
		partial += int(c.partial.Load())
		// A killed child cannot fail by its exit status: a race it found
		// shows only on stderr.
		if strings.Contains(c.stderr.String(), "DATA RACE") {
			t.Errorf("round %d: the child found a data race:\n%s", round, c.stderr.String())
		}

		facts := procVerifyLog(t, path, l)
		inflight := 0
		for _, m := range l.tried {
			if m.Child == round {
				inflight++
			}
		}
		rc := facts.roundCommitted(l, round)
		committed += rc
		absent += inflight - rc
		t.Logf("round %2d %-6s killed at %-5s after %3d acks: head %6d, %d in flight (%d committed)", round, mode, moment, acks, facts.head, inflight, rc)
	}
	facts := procVerifyLog(t, path, l)
	t.Logf("%d kills (modes %v, moments %v): %d appends (%d events) acknowledged, %d of them retries of in-flight appends; "+
		"in flight at a kill: %d committed, %d not; %d partial lines; head %d; %v",
		kills, modes, moments, l.appends, len(l.acked), l.retries, committed, absent, partial, facts.head, time.Since(start).Round(time.Millisecond))
}
