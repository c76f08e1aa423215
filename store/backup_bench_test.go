package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
)

// The backup benchmark's file: the 1M-event file of bench_test.go
// (20,000 events under -short), built once per binary in a temp dir of its
// own, which TestMain removes when the binary ends (a benchmark's cleanup
// runs after every one of its runs, -count and b.N probes included).
var (
	backupFixtureMu   sync.Mutex
	backupFixturePath string
)

func backupFixture(b *testing.B) string {
	backupFixtureMu.Lock()
	defer backupFixtureMu.Unlock()
	if backupFixturePath != "" {
		return backupFixturePath
	}
	dir, err := os.MkdirTemp("", "eventlite-backup-bench-")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "1m.db")
	t0 := time.Now()
	if _, err := buildFixture(path, benchFixtureEvents()); err != nil {
		_ = os.RemoveAll(dir)
		b.Fatalf("build fixture: %v", err)
	}
	b.Logf("fixture %s: %d events, ready in %v", path, benchFixtureEvents(), time.Since(t0).Round(time.Millisecond))
	backupFixturePath = path
	return path
}

// removeBackupFixture removes the backup benchmark's file, if built.
func removeBackupFixture() {
	backupFixtureMu.Lock()
	defer backupFixtureMu.Unlock()
	if backupFixturePath != "" {
		_ = os.RemoveAll(filepath.Dir(backupFixturePath))
		backupFixturePath = ""
	}
}

// TestMain runs the package's tests and benchmarks, then removes the
// files that benchmarks built once per binary.
func TestMain(m *testing.M) {
	code := m.Run()
	removeBackupFixture()
	closeQueryFixtures()
	if fixtureDir != "" { // BenchmarkFile1M's, kept for every -count
		_ = os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// appendMeter is one goroutine appending single events to its own stream
// with exact expected versions (synchronous FULL), counting them and
// keeping their latencies.
type appendMeter struct {
	s       *store.Store
	stream  string
	version int64
	n       atomic.Int64
	lat     []time.Duration
}

// run appends until stop is closed and reports the first error.
func (m *appendMeter) run(stop <-chan struct{}) error {
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		t0 := time.Now()
		res, err := m.s.Append(ctx, "default", m.stream, store.Exact(m.version),
			envelope.Event{Source: "/bench/backup", Type: "bench.appended", Data: []byte(`{"during":"backup"}`)})
		if err != nil {
			return err
		}
		m.lat = append(m.lat, time.Since(t0))
		m.version = res.Version
		m.n.Add(1)
	}
}

// measure runs the meter while fn runs (or, with fn nil, for d) and
// returns appends/s and the latencies of that phase.
func (m *appendMeter) measure(b *testing.B, d time.Duration, fn func()) (float64, []time.Duration) {
	m.lat = m.lat[:0]
	start := m.n.Load()
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- m.run(stop) }()
	t0 := time.Now()
	if fn != nil {
		fn()
	} else {
		time.Sleep(d) // a timed phase: the baseline rate over as long as the backup took
	}
	el := time.Since(t0)
	close(stop)
	if err := <-errc; err != nil {
		b.Fatalf("appender: %v", err)
	}
	return float64(m.n.Load()-start) / el.Seconds(), append([]time.Duration(nil), m.lat...)
}

// BenchmarkBackup1M backs up the 1M-event file (20,000 under -short) with
// Backup of the open store's path, one backup per op, while one goroutine
// appends single events to the same store; after each backup the same goroutine appends
// alone for as long as the backup took. Metrics: backup_s (the whole
// Backup: copy, verification, rename), copy_s and verify_s, MB/s (file
// bytes over backup_s) and copy_MB/s; appends/s of the writer during the
// backup and alone, x_alone = during / alone (same run, alternating), and
// the writer's latencies in both phases (during_p50_ms ..., alone_p50_ms
// ...).
func BenchmarkBackup1M(b *testing.B) {
	path := backupFixture(b)
	ctx := context.Background()
	s := openBenchStore(b, path, "FULL")
	dest := filepath.Join(filepath.Dir(path), "backup.db")
	// Read the file once, untimed, so that the first op does not pay for
	// a cold OS page cache.
	if err := s.CheckInvariants(ctx); err != nil {
		b.Fatal(err)
	}
	m := &appendMeter{s: s, stream: fmt.Sprintf("bench-writer-%d", time.Now().UnixNano())}
	var total, copyDur, verify time.Duration
	var bytes int64
	var during, alone float64
	var latDuring, latAlone []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_ = os.Remove(dest)
		b.StartTimer()
		var res backup.Result
		var verifyAt time.Time
		t0 := time.Now()
		rate, lat := m.measure(b, 0, func() {
			var err error
			res, err = backup.Create(ctx, s.Path(), dest, &backup.Options{Progress: func(p backup.Progress) {
				if p.Phase == backup.PhaseVerify && verifyAt.IsZero() {
					verifyAt = time.Now()
				}
			}})
			if err != nil {
				b.Fatalf("backup: %v", err)
			}
		})
		el := time.Since(t0)
		b.StopTimer()
		total += el
		copyDur += verifyAt.Sub(t0)
		verify += el - verifyAt.Sub(t0)
		bytes += res.Bytes
		during += rate
		latDuring = append(latDuring, lat...)
		rate, lat = m.measure(b, el, nil)
		alone += rate
		latAlone = append(latAlone, lat...)
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(total.Seconds()/n, "backup_s")
	b.ReportMetric(copyDur.Seconds()/n, "copy_s")
	b.ReportMetric(verify.Seconds()/n, "verify_s")
	b.ReportMetric(float64(bytes)/1e6/total.Seconds(), "MB/s")
	b.ReportMetric(float64(bytes)/1e6/copyDur.Seconds(), "copy_MB/s")
	b.ReportMetric(float64(bytes)/n/1e6, "file_MB")
	b.ReportMetric(during/n, "during_appends/s")
	b.ReportMetric(alone/n, "alone_appends/s")
	if alone > 0 {
		b.ReportMetric(during/alone, "x_alone")
	}
	reportLatency(b, "during_", latDuring)
	reportLatency(b, "alone_", latAlone)
	_ = os.Remove(dest)
}
