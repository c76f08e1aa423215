package main

import (
	"bufio"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
)

// cliTags are tags that must survive the CLI byte for byte: the
// separator, the escape, non-ASCII text.
var cliTags = []string{`a,b`, `\`, `x\,y`, "course:c1", "ünï"}

func tagArgs(flag string, tags []string) []string {
	var out []string
	for _, t := range tags {
		out = append(out, flag, t)
	}
	return out
}

// TestAppendTagsAndTailByQuery: append --tag stores the tags byte for
// byte (JSON output carries them as the eventlitetags extension), stdin
// events keep theirs and get --tag's after them, tail --tag/--type
// prints the matching events, and hostile tags are refused with exit 4
// and nothing stored.
func TestAppendTagsAndTailByQuery(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	checkInvariants(t, db)
	mustRun(t, "", append([]string{"append", "c1", "--type", "CourseDefined", "--id", "e1", "--db", db}, tagArgs("--tag", cliTags)...)...)
	mustRun(t, "", "append", "c2", "--type", "CourseDefined", "--id", "e2", "--tag", "course:c2", "--db", db)
	in := `{"specversion":"1.0","id":"e3","source":"test","type":"StudentSubscribed","eventlitetags":"course:c1,student:s\\,1"}`
	mustRun(t, in, "append", "c1", "--tag", "extra", "--db", db)

	all := decodeLines(t, mustRun(t, "", "tail", "--db", db).stdout)
	if len(all) != 3 || !slices.Equal(all[0].Tags, cliTags) {
		t.Fatalf("tail: %+v", all)
	}
	if want := []string{"course:c1", "student:s,1", "extra"}; !slices.Equal(all[2].Tags, want) {
		t.Errorf("stdin event's tags %q, want %q", all[2].Tags, want)
	}
	if !strings.Contains(mustRun(t, "", "read", "c1", "--db", db).stdout, `"eventlitetags":"a\\,b,\\\\,x\\\\\\,y,course:c1,ünï"`) {
		t.Errorf("read output lacks the encoded tags")
	}
	ids := func(args ...string) []string {
		t.Helper()
		var out []string
		for _, e := range decodeLines(t, mustRun(t, "", append([]string{"tail", "--db", db}, args...)...).stdout) {
			out = append(out, e.ID)
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--tag", "course:c1"}, []string{"e1", "e3"}},
		{[]string{"--tag", `x\,y`}, []string{"e1"}},
		{[]string{"--tag", "course:c1", "--type", "StudentSubscribed"}, []string{"e3"}},
		{[]string{"--type", "CourseDefined"}, []string{"e1", "e2"}},
		{[]string{"--type", "CourseDefined", "--type", "StudentSubscribed", "--tag", "course:c1", "--tag", "extra"}, []string{"e3"}},
		{[]string{"--tag", "none"}, nil},
	} {
		if got := ids(c.args...); !slices.Equal(got, c.want) {
			t.Errorf("tail %q: %v, want %v", c.args, got, c.want)
		}
	}
	for _, bad := range []string{"", " lead", "a\x01b", "a\nb", strings.Repeat("x", envelope.MaxTagBytes+1)} {
		r := run(t, "", "append", "hostile", "--type", "t", "--tag", bad, "--db", db)
		if r.code != exitInvalid || !strings.Contains(r.stderr, "tags") {
			t.Errorf("--tag %q: exit %d, stderr %s", bad, r.code, r.stderr)
		}
	}
	r := run(t, "", "append", "hostile", "--type", "t", "--tag", "a", "--tag", "a", "--db", db)
	if r.code != exitInvalid {
		t.Errorf("a repeated tag: exit %d", r.code)
	}
	if r := run(t, "", "read", "hostile", "--db", db); r.code != exitNotFound {
		t.Errorf("refused appends stored a stream: exit %d", r.code)
	}
	if r := run(t, "", "tail", "--tag", "", "--db", db); r.code != exitInvalid {
		t.Errorf("tail --tag '': exit %d", r.code)
	}
}

// TestAppendCondition: --if-tag makes the append fail (exit 3, naming
// the matching event's position) when a matching event is after
// --if-after, and succeed otherwise.
func TestAppendConditionFlags(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	checkInvariants(t, db)
	claim := func(stream string, extra ...string) result {
		args := append([]string{"append", stream, "--type", "UserRegistered", "--tag", "username:alice", "--if-tag", "username:alice", "--db", db}, extra...)
		return run(t, "", args...)
	}
	if r := claim("user-1", "--id", "u1"); r.code != exitOK {
		t.Fatalf("first claim: exit %d: %s", r.code, r.stderr)
	}
	r := claim("user-2")
	if r.code != exitConflict || !strings.Contains(r.stderr, "position 1") || !strings.Contains(r.stderr, `"u1"`) {
		t.Errorf("second claim: exit %d, stderr %s", r.code, r.stderr)
	}
	if r := claim("user-2", "--if-after", "1"); r.code != exitOK {
		t.Errorf("claim after position 1: exit %d: %s", r.code, r.stderr)
	}
	if r := claim("user-3", "--if-type", "Other"); r.code != exitOK {
		t.Errorf("claim counting another type only: exit %d: %s", r.code, r.stderr)
	}
	// The retry of the first claim prints its first result.
	if r := claim("user-1", "--id", "u1"); r.code != exitOK || !strings.Contains(r.stdout, "position 1") {
		t.Errorf("retry of the first claim: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	// Both fail: the version conflict is reported.
	if r := claim("user-1", "--expected", "7"); r.code != exitConflict || !strings.Contains(r.stderr, "expected version 7") {
		t.Errorf("expected and condition both failing: exit %d, %s", r.code, r.stderr)
	}
	if r := run(t, "", "append", "x", "--type", "t", "--if-after", "3", "--db", db); r.code != exitUsage {
		t.Errorf("--if-after alone: exit %d", r.code)
	}
}

// TestTailFollowByTag: tail --follow --tag prints the matching events as
// they are appended, and only those.
func TestTailFollowByTag(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	mustRun(t, "", "append", "s", "--type", "t", "--id", "first", "--tag", "k", "--db", db)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		m := &Main{Stdout: pw, Stderr: &stderr}
		done <- m.Run(ctx, []string{"tail", "--follow", "--tag", "k", "--db", db})
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
				t.Fatalf("tail ended early: exit %d, stderr:\n%s", <-done, stderr.String())
			}
			return decodeLines(t, line)[0]
		case <-time.After(time.Minute): // a guard against a hang, not a synchronisation
			t.Fatal("no line within a minute")
		}
		panic("unreachable")
	}
	if e := next(); e.ID != "first" {
		t.Fatalf("first line %q", e.ID)
	}
	mustRun(t, "", "append", "s", "--type", "t", "--id", "untagged", "--db", db)
	mustRun(t, "", "append", "s", "--type", "t", "--id", "second", "--tag", "k", "--db", db)
	if e := next(); e.ID != "second" || !slices.Equal(e.Tags, []string{"k"}) {
		t.Fatalf("second line %q %q", e.ID, e.Tags)
	}
	cancel()
	<-done
}
