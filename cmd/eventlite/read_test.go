package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	cloudevent "github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	_ "modernc.org/sqlite"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

func TestRead(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	checkInvariants(t, db)
	mustRun(t, events(5), "append", "s", "--db", db)
	mustRun(t, "", "append", "other", "--type", "t", "--db", db)
	tests := []struct {
		args []string
		want []int64 // versions
	}{
		{nil, []int64{1, 2, 3, 4, 5}},
		{[]string{"--from", "3"}, []int64{3, 4, 5}},
		{[]string{"--from", "0"}, []int64{1, 2, 3, 4, 5}},
		{[]string{"--from", "6"}, nil},
		{[]string{"--limit", "2"}, []int64{1, 2}},
		{[]string{"--from", "2", "--limit", "2"}, []int64{2, 3}},
		{[]string{"--backward"}, []int64{5, 4, 3, 2, 1}},
		{[]string{"--backward", "--from", "2"}, []int64{2, 1}},
		{[]string{"--backward", "--limit", "2"}, []int64{5, 4}},
		{[]string{"--backward", "--from", "4", "--limit", "2"}, []int64{4, 3}},
		{[]string{"--limit", "0"}, []int64{1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(append([]string{"read"}, tt.args...), " "), func(t *testing.T) {
			t.Parallel()
			r := mustRun(t, "", append([]string{"read", "s", "--db", db}, tt.args...)...)
			evs := decodeLines(t, r.stdout)
			if diff := cmp.Diff(tt.want, versions(evs)); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
			for _, e := range evs {
				if e.Stream != "s" || e.Tenant != "default" {
					t.Errorf("event %s: stream %q tenant %q", e.ID, e.Stream, e.Tenant)
				}
			}
		})
	}
}

func TestReadNotFound(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	mustRun(t, "", "append", "s", "--type", "t", "--db", db)
	tests := []struct {
		name string
		args []string
	}{
		{"a stream that does not exist", []string{"read", "nope", "--db", db}},
		{"a stream of another tenant", []string{"read", "s", "--tenant", "acme", "--db", db}},
		{"a database that does not exist", []string{"read", "s", "--db", newDB(t)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, "", tt.args...)
			if r.code != exitNotFound {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitNotFound, r.stderr)
			}
			if r.stdout != "" || !strings.HasPrefix(r.stderr, "eventlite: ") || !strings.Contains(r.stderr, "not found") {
				t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
			}
		})
	}
}

// TestReadOnlyCommandsCreateNothing: reading a database that does not
// exist does not leave a new file behind, and says so (exit 5).
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"read", "s"}, exitNotFound},
		{[]string{"tail"}, exitNotFound},
		{[]string{"streams", "--json"}, exitNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := run(t, "", append(tt.args, "--db", dir+"/events.db")...)
			if r.code != tt.want || r.stdout != "" {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q", r.code, tt.want, r.stdout, r.stderr)
			}
			if entries, _ := readDir(dir); len(entries) != 0 {
				t.Errorf("%s left %q behind", tt.args[0], entries)
			}
		})
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	checkInvariants(t, db)
	// Positions: a1=1, b1=2, a2=3, a3=4.
	mustRun(t, "", "append", "a", "--type", "t", "--id", "a1", "--db", db)
	mustRun(t, "", "append", "b", "--type", "t", "--id", "b1", "--tenant", "acme", "--db", db)
	mustRun(t, events(2), "append", "a", "--db", db)
	tests := []struct {
		args []string
		want []string // ids
	}{
		{nil, []string{"a1", "e1", "e2"}},
		{[]string{"--tenant", "acme"}, []string{"b1"}},
		{[]string{"--tenant", "nobody"}, nil},
		{[]string{"--from", "3"}, []string{"e1", "e2"}},
		{[]string{"--from", "2"}, []string{"e1", "e2"}},
		{[]string{"--from", "2", "--tenant", "acme"}, []string{"b1"}},
		{[]string{"--from", "0"}, []string{"a1", "e1", "e2"}},
		{[]string{"--from", "5"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(append([]string{"tail"}, tt.args...), " "), func(t *testing.T) {
			t.Parallel()
			r := mustRun(t, "", append([]string{"tail", "--db", db}, tt.args...)...)
			var ids []string
			var last int64
			for _, e := range decodeLines(t, r.stdout) {
				ids = append(ids, e.ID)
				if e.Position <= last {
					t.Errorf("position %d after %d", e.Position, last)
				}
				last = e.Position
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTailEmpty(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s, err := store.Open(t.Context(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "tail", "--db", db)
	if diff := cmp.Diff(result{code: exitOK}, r, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("tail of an empty store (-want +got):\n%s", diff)
	}
}

// TestTailFollow follows the log while a second process-like handle (its
// own Main.Run, so its own store) appends, and stops when ctx ends.
func TestTailFollow(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	mustRun(t, "", "append", "s", "--type", "t", "--id", "first", "--db", db)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		m := &Main{Stdout: pw, Stderr: &stderr}
		done <- m.Run(ctx, []string{"tail", "--follow", "--db", db})
		pw.Close()
	}()
	got := make(chan string)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			got <- sc.Text()
		}
	}()
	next := func() envelope.Event {
		t.Helper()
		select {
		case line, ok := <-got:
			if !ok {
				t.Fatalf("tail --follow ended early: exit %d, stderr:\n%s", <-done, stderr.String())
			}
			return decodeLines(t, line)[0]
		case <-time.After(time.Minute): // a guard against a hang, not a synchronisation
			t.Fatal("no line from tail --follow within a minute")
		}
		panic("unreachable")
	}
	if e := next(); e.ID != "first" {
		t.Fatalf("first line: id %q", e.ID)
	}
	// tail has read the log up to here: the next event reaches it only
	// through its wait for a commit by another connection.
	mustRun(t, "", "append", "s", "--type", "t", "--id", "second", "--db", db)
	if e := next(); e.ID != "second" || e.StreamVersion != 2 {
		t.Fatalf("second line: id %q version %d", e.ID, e.StreamVersion)
	}
	mustRun(t, "", "append", "other", "--type", "t", "--id", "elsewhere", "--tenant", "acme", "--db", db)
	mustRun(t, "", "append", "s", "--type", "t", "--id", "third", "--db", db)
	if e := next(); e.ID != "third" {
		t.Fatalf("third line: id %q, want another tenant's events left out", e.ID)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("interrupted tail --follow: exit %d, want %d; stderr:\n%s", code, exitOK, stderr.String())
		}
	case <-time.After(time.Minute): // a guard against a hang, not a synchronisation
		t.Fatal("tail --follow did not stop within a minute of its ctx ending")
	}
	for line := range got {
		t.Errorf("unexpected line after the last append: %s", line)
	}
}

// TestLargePosition: a position above 2^31 (beyond CloudEvents' 32-bit
// integers) travels as a decimal string through append, read and tail,
// and sdk-go reads it.
func TestLargePosition(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s, err := store.Open(t.Context(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdb.Exec(`UPDATE position_floor SET position = 3000000000`); err != nil {
		t.Fatal(err)
	}
	if err := sdb.Close(); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, db)

	r := mustRun(t, "", "append", "big", "--type", "t", "--json", "--db", db)
	if !strings.Contains(r.stdout, `"first_position":"3000000001"`) || !strings.Contains(r.stdout, `"last_position":"3000000001"`) {
		t.Errorf("append --json = %q", r.stdout)
	}
	mustRun(t, "", "append", "big", "--type", "t", "--db", db)
	tests := []struct {
		args []string
		want []int64 // positions
	}{
		{[]string{"read", "big"}, []int64{3000000001, 3000000002}},
		{[]string{"read", "big", "--from", "2"}, []int64{3000000002}},
		{[]string{"tail"}, []int64{3000000001, 3000000002}},
		{[]string{"tail", "--from", "3000000001"}, []int64{3000000001, 3000000002}},
		{[]string{"tail", "--from", "3000000002"}, []int64{3000000002}},
		{[]string{"tail", "--from", "3000000003"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := mustRun(t, "", append(tt.args, "--db", db)...)
			var got []int64
			for i, line := range lines(r.stdout) {
				want := fmt.Sprint(tt.want[min(i, len(tt.want)-1)])
				if s := `"position":"` + want + `"`; !strings.Contains(line, s) {
					t.Errorf("line %d lacks %s: %s", i, s, line)
				}
				ce := cloudevent.New()
				if err := ce.UnmarshalJSON([]byte(line)); err != nil {
					t.Fatalf("sdk-go: %v", err)
				}
				if pos, err := types.ToString(ce.Extensions()["position"]); err != nil || pos != want {
					t.Errorf("sdk-go reads position %q (%v), want %q", pos, err, want)
				}
				got = append(got, decodeLines(t, line)[0].Position)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("positions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCopyStream: read S | append S --db other.db copies a stream,
// ids and times included, and running it twice is a retry.
func TestCopyStream(t *testing.T) {
	t.Parallel()
	src, dst := newDB(t), newDB(t)
	checkInvariants(t, src)
	checkInvariants(t, dst)
	mustRun(t, "", "append", "other", "--type", "t", "--db", src) // so positions differ between the files
	mustRun(t, `{"specversion":"1.0","id":"x1","source":"/a","type":"t","time":"2020-05-06T07:08:09.123456789-05:00","correlationid":"c","data":{"a":[1, 2]}}`, "append", "s", "--db", src)
	mustRun(t, "", "append", "s", "--type", "u", "--data", `"text"`, "--db", src)
	mustRun(t, events(2), "append", "s", "--db", src)
	orig := mustRun(t, "", "read", "s", "--db", src).stdout

	for range 2 { // the second copy is a retry
		r := mustRun(t, orig, "append", "s", "--db", dst, "--json")
		if diff := cmp.Diff(`{"tenant":"default","stream":"s","version":4,"first_position":"1","last_position":"4"}`+"\n", r.stdout); diff != "" {
			t.Errorf("copy (-want +got):\n%s", diff)
		}
	}
	copied := mustRun(t, "", "read", "s", "--db", dst).stdout
	want, got := decodeLines(t, orig), decodeLines(t, copied)
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(envelope.Event{}, "Position")); diff != "" {
		t.Errorf("copied events (-want +got):\n%s", diff)
	}
	if got[0].Time.Equal(time.Time{}) || !strings.Contains(copied, `"time":"2020-05-06T12:08:09.123456789Z"`) {
		t.Errorf("the time is not kept in UTC:\n%s", copied)
	}
}

func readDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}
