package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// appendOne stores one valid event so that the database exists, and
// returns its path.
func appendOne(t *testing.T) string {
	t.Helper()
	db := newDB(t)
	mustRun(t, "", "append", "s", "--type", "t", "--db", db)
	checkInvariants(t, db)
	return db
}

// storedEvents reads stream s.
func storedEvents(t *testing.T, db string) int {
	t.Helper()
	return len(decodeLines(t, mustRun(t, "", "read", "s", "--db", db).stdout))
}

func ce(extra string) string {
	return `{"specversion":"1.0","id":"` + fmt.Sprint(time.Now().UnixNano()) + `","source":"/s","type":"t"` + extra + `}`
}

func TestAppendHostileInputExit4(t *testing.T) {
	deep := strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000)
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
		want  string // in stderr
	}{
		{"control character in type", `{"specversion":"1.0","id":"a","source":"/s","type":"a\u0000b"}`, nil, "type"},
		{"ESC in an extension", ce(`,"ext":"\u001b[2J"`), nil, "ext"},
		{"C1 control in correlation id", ce(`,"correlationid":"a\u0085"`), nil, "correlationid"},
		{"trailing space in id", `{"specversion":"1.0","id":"a ","source":"/s","type":"t"}`, nil, "id"},
		{"invalid UTF-8 in an attribute", ce(`,"causationid":"a` + "\xff" + `"`), nil, "causationid"},
		{"lone surrogate in an attribute", ce(`,"ext":"\ud800"`), nil, "ext"},
		{"invalid UTF-8 in data", ce(`,"data":"` + "\xfe" + `"`), nil, "data"},
		{"lone surrogate in data", ce(`,"data":["\udfff"]`), nil, "data"},
		{"duplicate id", `{"specversion":"1.0","id":"a","id":"b","source":"/s","type":"t"}`, nil, "id"},
		{"duplicate in a batch element", `[` + ce("") + `,{"specversion":"1.0","id":"a","source":"/s","type":"t","type":"u"}]`, nil, "type"},
		{"reserved type on stdin", `{"specversion":"1.0","id":"a","source":"/s","type":"eventlite.x"}`, nil, "eventlite."},
		{"data nested 10,000 deep on stdin", ce(`,"data":` + deep), nil, "data"},
		{"data nested 1,001 deep on stdin", ce(`,"data":` + deep[:1001] + deep[len(deep)-1001:]), nil, "data"},
		{"reserved type by flag", "", []string{"--type", "eventlite.stream.deleted"}, "eventlite."},
		{"control character by flag", "", []string{"--type", "a\tb"}, "type"},
		{"data nested 10,000 deep by flag", "", []string{"--type", "t", "--data", deep}, "data"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := appendOne(t)
			r := run(t, tt.stdin, append([]string{"append", "s", "--db", db}, tt.args...)...)
			if r.code != exitInvalid {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitInvalid, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr does not name %q:\n%s", tt.want, r.stderr)
			}
			if n := storedEvents(t, db); n != 1 {
				t.Errorf("%d events stored, want the 1 from before", n)
			}
		})
	}
}

func TestAppendEmptyExpectedExit2(t *testing.T) {
	db := appendOne(t)
	for _, args := range [][]string{{"--expected="}, {"--expected", ""}} {
		r := run(t, "", append([]string{"append", "s", "--type", "t", "--db", db}, args...)...)
		if r.code != exitUsage {
			t.Fatalf("%q: exit %d, want %d; stderr:\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
	if n := storedEvents(t, db); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
}

// Data nested 1,000 deep is accepted on every path, a copy included.
func TestDataDepthLimitEveryPath(t *testing.T) {
	data := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
	db := newDB(t)
	mustRun(t, "", "append", "s", "--type", "t", "--data", data, "--db", db)
	mustRun(t, ce(`,"data":`+data), "append", "s", "--db", db)
	out := mustRun(t, "", "read", "s", "--db", db).stdout
	other := newDB(t)
	mustRun(t, out, "append", "s", "--db", other)
	if n := storedEvents(t, other); n != 2 {
		t.Fatalf("copied %d events, want 2", n)
	}
}

// Extreme times survive append, read and a read | append copy exactly.
func TestAppendExtremeTimesCLI(t *testing.T) {
	times := []string{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000001Z", "1677-09-21T00:00:00Z",
		"2262-04-12T00:00:00Z", "9999-12-31T23:59:59.999999999Z"}
	var in strings.Builder
	for _, ts := range times {
		in.WriteString(ce(`,"time":"` + ts + `"`))
	}
	db := newDB(t)
	mustRun(t, in.String(), "append", "s", "--db", db)
	out := mustRun(t, "", "read", "s", "--db", db).stdout
	other := newDB(t)
	mustRun(t, out, "append", "s", "--db", other)
	for _, d := range []string{db, other} {
		evs := decodeLines(t, mustRun(t, "", "read", "s", "--db", d).stdout)
		if len(evs) != len(times) {
			t.Fatalf("%d events, want %d", len(evs), len(times))
		}
		for i, e := range evs {
			if got := e.Time.Format(time.RFC3339Nano); got != times[i] || !e.HasTime() {
				t.Errorf("event %d: time %s, want %s", i, got, times[i])
			}
		}
	}
}

// countingReader yields n bytes of white space and counts what was read.
type countingReader struct{ n, read int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	for i := range p[:k] {
		p[i] = ' '
	}
	r.read += k
	return int(k), nil
}

// More than 64 MiB on stdin is refused once the bound is passed: the rest
// is never read, and memory stays bounded.
func TestAppendStdinBound(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 64 MiB")
	}
	db := appendOne(t)
	in := &countingReader{n: 200 << 20}
	var stdout, stderr bytes.Buffer
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code := (&Main{Stdin: in, Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}).
		Run(context.Background(), []string{"append", "s", "--db", db})
	runtime.ReadMemStats(&after)
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInvalid, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stdin") || !strings.Contains(stderr.String(), fmt.Sprint(maxStdinBytes)) {
		t.Errorf("stderr does not name stdin and the limit:\n%s", stderr.String())
	}
	if in.read > maxStdinBytes+64<<10 {
		t.Errorf("read %d bytes of stdin, want at most the bound %d and a buffer", in.read, maxStdinBytes)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("read %d bytes; allocated %d MiB in total", in.read, alloc>>20)
	// Reading up to the bound into a growing buffer allocates about twice
	// the bound; reading all 200 MiB (as before the bound) took 1.19 GB.
	if limit := uint64(4 * maxStdinBytes); alloc > limit {
		t.Errorf("allocated %d MiB for 200 MiB of stdin, want at most %d MiB (4x the bound)", alloc>>20, limit>>20)
	}
	if n := storedEvents(t, db); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
}
