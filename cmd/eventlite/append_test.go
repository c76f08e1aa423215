package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/eventlite/eventlite/envelope"
)

func TestAppendExpected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		before   int // events in the stream before the append
		expected string
		want     int      // exit code
		stderr   []string // for a conflict: must appear on stderr
	}{
		{"any on a new stream", 0, "any", exitOK, nil},
		{"any on an existing stream", 2, "any", exitOK, nil},
		{"no-stream on a new stream", 0, "no-stream", exitOK, nil},
		{"0 on a new stream", 0, "0", exitOK, nil},
		{"exists on an existing stream", 1, "exists", exitOK, nil},
		{"the current version", 2, "2", exitOK, nil},
		{"no-stream on an existing stream", 1, "no-stream", exitConflict, []string{"expected no stream", "actual version 1", "--expected 1"}},
		{"0 on an existing stream", 2, "0", exitConflict, []string{"expected no stream", "actual version 2", "--expected 2"}},
		{"exists on a new stream", 0, "exists", exitConflict, []string{"expected an existing stream", "the stream does not exist", "--expected no-stream"}},
		{"an older version", 2, "1", exitConflict, []string{"expected version 1", "actual version 2"}},
		{"a newer version", 1, "5", exitConflict, []string{"expected version 5", "actual version 1"}},
		{"a version on a new stream", 0, "3", exitConflict, []string{"expected version 3", "the stream does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			checkInvariants(t, db)
			if tt.before > 0 {
				mustRun(t, events(tt.before), "append", "s", "--db", db)
			}
			r := run(t, "", "append", "s", "--type", "t", "--expected", tt.expected, "--db", db, "--json")
			if r.code != tt.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			var want []int64
			for v := range tt.before {
				want = append(want, int64(v+1))
			}
			if tt.want == exitOK {
				want = append(want, int64(tt.before+1))
				var got appendOutput
				if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Version != int64(tt.before+1) {
					t.Errorf("append printed %q (%v), want version %d", r.stdout, err, tt.before+1)
				}
			}
			got := run(t, "", "read", "s", "--db", db)
			if diff := cmp.Diff(want, versions(decodeLines(t, got.stdout))); diff != "" {
				t.Errorf("stream versions (-want +got):\n%s", diff)
			}
		})
	}
}

// events returns n structured CloudEvents with ids e1..en, one per line.
func events(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"e%d","source":"test","type":"t"}`+"\n", i+1)
	}
	return b.String()
}

func TestAppendOutput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	checkInvariants(t, db)
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"one event", "", []string{"append", "order-1", "--type", "t"}, "appended 1 event to order-1: version 1, position 1\n"},
		{"a batch", events(3), []string{"append", "order-1"}, "appended 3 events to order-1: version 4, positions 2-4\n"},
		{"another tenant", "", []string{"append", "order-1", "--type", "t", "--tenant", "acme"}, "appended 1 event to order-1 (tenant acme): version 1, position 5\n"},
		{"a stream id with a space", "", []string{"append", "order 2", "--type", "t"}, "appended 1 event to \"order 2\": version 1, position 6\n"},
		{"--json", "", []string{"append", "order-1", "--type", "t", "--json"}, `{"tenant":"default","stream":"order-1","version":5,"first_position":"7","last_position":"7"}` + "\n"},
		{"--json, a batch", `[{"specversion":"1.0","id":"b1","source":"x","type":"t"},{"specversion":"1.0","id":"b2","source":"x","type":"t"}]`, []string{"append", "order-1", "--json"}, `{"tenant":"default","stream":"order-1","version":7,"first_position":"8","last_position":"9"}` + "\n"},
	}
	for _, tt := range tests { // in order: they share the database
		t.Run(tt.name, func(t *testing.T) {
			r := mustRun(t, tt.stdin, append(tt.args, "--db", db)...)
			if diff := cmp.Diff(tt.want, r.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppendRetry(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	checkInvariants(t, db)
	first := mustRun(t, "", "append", "s", "--type", "t", "--id", "op-1", "--data", `{"n": 1}`, "--json", "--db", db)
	// A retry, even one whose expectation no longer holds, prints the first
	// result and appends nothing.
	for _, expected := range []string{"any", "no-stream", "0"} {
		again := mustRun(t, "", "append", "s", "--type", "t", "--id", "op-1", "--data", `{"n":1}`, "--json", "--expected", expected, "--db", db)
		if diff := cmp.Diff(first.stdout, again.stdout); diff != "" {
			t.Errorf("retry with --expected %s (-first +retry):\n%s", expected, diff)
		}
	}
	// The same id with other data, another type or in another stream is
	// refused.
	for _, args := range [][]string{
		{"s", "--type", "t", "--data", `{"n":2}`},
		{"s", "--type", "u", "--data", `{"n":1}`},
		{"other", "--type", "t", "--data", `{"n":1}`},
	} {
		r := run(t, "", append([]string{"append", "--id", "op-1", "--db", db}, args...)...)
		if r.code != exitInvalid || !strings.Contains(r.stderr, `event id "op-1"`) || !strings.Contains(r.stderr, "already used") {
			t.Errorf("append %q: exit %d, want %d naming the id; stderr:\n%s", args, r.code, exitInvalid, r.stderr)
		}
	}
	r := mustRun(t, "", "read", "s", "--db", db)
	if diff := cmp.Diff([]int64{1}, versions(decodeLines(t, r.stdout))); diff != "" {
		t.Errorf("stream versions (-want +got):\n%s", diff)
	}
}

func TestAppendData(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "data.json")
	if err := os.WriteFile(file, []byte("{\n  \"total\": 5,\n  \"items\": [1, 2]\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		want     int
		wantData string // the stored data, when want is 0
		stderr   string // when want is not 0
	}{
		{"inline JSON", []string{"--data", `{"total": 5}`}, exitOK, `{"total":5}`, ""},
		{"@file", []string{"--data", "@" + file}, exitOK, `{"total":5,"items":[1,2]}`, ""},
		{"no data", nil, exitOK, "", ""},
		{"a JSON string", []string{"--data", `"hi"`}, exitOK, `"hi"`, ""},
		{"invalid JSON", []string{"--data", `{"total":`}, exitInvalid, "", "data: content type application/json but data is not valid JSON"},
		{"not JSON at all", []string{"--data", `hello`}, exitInvalid, "", "data:"},
		{"a missing file", []string{"--data", "@" + filepath.Join(dir, "nope.json")}, exitInvalid, "", "cannot read --data @"},
		{"empty --id", []string{"--id", ""}, exitInvalid, "", "id: empty"},
		{"a source that is not a URI-reference", []string{"--source", "%zz"}, exitInvalid, "", "source: not a URI-reference"},
		{"empty --type", []string{"--type", ""}, exitInvalid, "", "type: required"},
		{"data over the limit", []string{"--data", `"` + strings.Repeat("x", envelope.DefaultMaxDataBytes) + `"`}, exitInvalid, "", "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			r := run(t, "", append([]string{"append", "s", "--type", "t", "--db", db}, tt.args...)...)
			if r.code != tt.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
			if tt.want != exitOK {
				if !strings.Contains(r.stderr, tt.stderr) {
					t.Errorf("stderr lacks %q:\n%s", tt.stderr, r.stderr)
				}
				if got := run(t, "", "streams", "--json", "--db", db); got.stdout != "" {
					t.Errorf("a refused append stored %q", got.stdout)
				}
				return
			}
			evs := decodeLines(t, mustRun(t, "", "read", "s", "--db", db).stdout)
			if len(evs) != 1 {
				t.Fatalf("read %d events, want 1", len(evs))
			}
			if diff := cmp.Diff(tt.wantData, string(evs[0].Data)); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if evs[0].Source != defaultSource {
				t.Errorf("source = %q, want %q", evs[0].Source, defaultSource)
			}
		})
	}
}

func TestAppendStdin(t *testing.T) {
	t.Parallel()
	const pretty = `{
  "specversion": "1.0",
  "id": "a-1",
  "source": "https://example.com/shop",
  "type": "order.placed",
  "subject": "order-1",
  "time": "2024-01-02T03:04:05.5+02:00",
  "tenant": "default",
  "position": "99",
  "streamversion": 42,
  "traceparent": "00-abc",
  "data": {
    "total": 5
  }
}

	{"specversion":"1.0","id":"a-2","source":"/shop","type":"order.paid"}
`
	tests := []struct {
		name   string
		stdin  string
		args   []string
		want   int
		ids    []string // the ids stored, when want is 0
		stderr string   // when want is not 0
	}{
		{"a pretty-printed sequence", pretty, nil, exitOK, []string{"a-1", "a-2"}, ""},
		{"a batch array", `[{"specversion":"1.0","id":"b-1","source":"x","type":"t"}, {"specversion":"1.0","id":"b-2","source":"x","type":"t"}]`, nil, exitOK, []string{"b-1", "b-2"}, ""},
		{"a batch and an event", "[{\"specversion\":\"1.0\",\"id\":\"c-1\",\"source\":\"x\",\"type\":\"t\"}]\n{\"specversion\":\"1.0\",\"id\":\"c-2\",\"source\":\"x\",\"type\":\"t\"}", nil, exitOK, []string{"c-1", "c-2"}, ""},
		{"another tenant, named", `{"specversion":"1.0","id":"d-1","source":"x","type":"t","tenant":"acme"}`, []string{"--tenant", "acme"}, exitOK, []string{"d-1"}, ""},
		{"empty input", "", nil, exitInvalid, nil, "nothing to append"},
		{"only white space", " \n\t\n", nil, exitInvalid, nil, "nothing to append"},
		{"an empty batch", "[]", nil, exitInvalid, nil, "nothing to append"},
		{"a subject that is not the stream", `{"specversion":"1.0","id":"e-1","source":"x","type":"t","subject":"order-2"}`, nil, exitInvalid, nil, `invalid event 0: subject: "order-2" differs from the stream "order-1"`},
		{"a tenant that is not --tenant", events(1) + `{"specversion":"1.0","id":"e-2","source":"x","type":"t","tenant":"acme"}`, nil, exitInvalid, nil, `invalid event 1: tenant: "acme" differs from the tenant "default"`},
		{"not JSON", "hello", nil, exitInvalid, nil, "not JSON"},
		{"a missing type", `{"specversion":"1.0","id":"e-1","source":"x"}`, nil, exitInvalid, nil, "type: required"},
		{"a bad second event", events(1) + `{"specversion":"0.3","id":"e-2","source":"x","type":"t"}`, nil, exitInvalid, nil, "invalid event 1: specversion"},
		{"one id twice", events(1) + events(1), nil, exitInvalid, nil, `event id "e1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			checkInvariants(t, db)
			r := run(t, tt.stdin, append([]string{"append", "order-1", "--db", db}, tt.args...)...)
			if r.code != tt.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tt.want, r.stderr)
			}
			if tt.want != exitOK {
				if !strings.Contains(r.stderr, tt.stderr) {
					t.Errorf("stderr lacks %q:\n%s", tt.stderr, r.stderr)
				}
				if got := run(t, "", "tail", "--db", db); got.stdout != "" {
					t.Errorf("a refused append stored %q", got.stdout)
				}
				return
			}
			evs := decodeLines(t, mustRun(t, "", append([]string{"read", "order-1", "--db", db}, tt.args...)...).stdout)
			var ids []string
			for i, e := range evs {
				ids = append(ids, e.ID)
				if e.StreamVersion != int64(i+1) || e.Position != int64(i+1) {
					t.Errorf("event %d: version %d position %d, want the store's %d and %d", i, e.StreamVersion, e.Position, i+1, i+1)
				}
			}
			if diff := cmp.Diff(tt.ids, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("attributes are kept", func(t *testing.T) {
		t.Parallel()
		db := newDB(t)
		mustRun(t, pretty, "append", "order-1", "--db", db)
		evs := decodeLines(t, mustRun(t, "", "read", "order-1", "--db", db, "--limit", "1").stdout)
		want := envelope.Event{
			ID:              "a-1",
			Source:          "https://example.com/shop",
			Type:            "order.placed",
			Stream:          "order-1",
			Time:            time.Date(2024, 1, 2, 1, 4, 5, 5e8, time.UTC),
			DataContentType: "application/json",
			Data:            []byte(`{"total":5}`),
			Tenant:          "default",
			StreamVersion:   1,
			Position:        1,
			Extensions:      map[string]any{"traceparent": "00-abc"},
		}
		if diff := cmp.Diff([]envelope.Event{want}, evs, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("stored event (-want +got):\n%s", diff)
		}
	})
}

// TestAppendSampleLog appends the repository's sample log as docs/testing.md
// shows and reads it back: every event keeps its id, type, time and data,
// and gets its stream version.
func TestAppendSampleLog(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile(filepath.Join("..", "..", "testdata", "sample-log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := envelope.DecodeSequence(strings.NewReader(string(in)), 0)
	if err != nil {
		t.Fatal(err)
	}
	db := newDB(t)
	checkInvariants(t, db)
	r := mustRun(t, string(in), "append", "order-1", "--expected", "no-stream", "--db", db)
	if diff := cmp.Diff("appended 3 events to order-1: version 3, positions 1-3\n", r.stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	got := decodeLines(t, mustRun(t, "", "read", "order-1", "--db", db).stdout)
	if len(got) != len(want) {
		t.Fatalf("read %d events, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.Type != w.Type || !g.Time.Equal(w.Time) || string(g.Data) != string(w.Data) || g.StreamVersion != int64(i+1) {
			t.Errorf("event %d: read id %q type %q time %v version %d data %s, want %q %q %v %d %s",
				i, g.ID, g.Type, g.Time, g.StreamVersion, g.Data, w.ID, w.Type, w.Time, i+1, w.Data)
		}
	}
}
