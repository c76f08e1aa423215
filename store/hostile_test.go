package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/storetest"
)

// dump returns every row of eventlite's tables as text, to prove that a
// refused append changed nothing.
func dump(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, table := range []string{"streams", "events", "outbox", "position_floor"} {
		rows, err := db.Query("SELECT * FROM " + table + " ORDER BY 1, 2")
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %q\n", table, vals)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

type vectorFile struct {
	Tests []struct {
		ID       string            `json:"id"`
		TestType string            `json:"testType"`
		Event    json.RawMessage   `json:"event"`
		Batch    []json.RawMessage `json:"batch"`
	} `json:"tests"`
}

// TestConformanceVectorsThroughAppend appends every CloudEvents conformance
// vector, each into a fresh store that already holds one event: valid ones
// are stored and read back with their attributes, invalid ones are refused
// with a typed error and leave the file unchanged. validBatchMinimal2 (one
// id twice in a batch) is refused on purpose: event ids are unique.
func TestConformanceVectorsThroughAppend(t *testing.T) {
	ctx := context.Background()
	for _, file := range []string{"valid-events.json", "valid-batches.json", "invalid-events.json", "invalid-batches.json"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "conformance", file))
		if err != nil {
			t.Fatal(err)
		}
		var vf vectorFile
		if err := json.Unmarshal(b, &vf); err != nil {
			t.Fatal(err)
		}
		wantValid := strings.HasPrefix(file, "valid")
		for _, v := range vf.Tests {
			t.Run(v.ID, func(t *testing.T) {
				s := storetest.MustOpen(t, nil)
				if _, err := s.Append(ctx, "default", "existing", store.Any, drivertest.Event(t, "t", 1)); err != nil {
					t.Fatal(err)
				}
				before := dump(t, s.Path())
				raws := v.Batch
				if v.Event != nil {
					raws = []json.RawMessage{v.Event}
				}
				var events []envelope.Event
				var decodeErr error
				for _, r := range raws {
					e, err := envelope.DecodeJSON(r, 0)
					if err != nil {
						decodeErr = err
						break
					}
					e.Stream = "" // the vectors' subjects are not our stream
					events = append(events, e)
				}
				valid := wantValid && v.ID != "validBatchMinimal2"
				if !valid {
					err := decodeErr
					if err == nil {
						_, err = s.Append(ctx, "default", "vector", store.Any, events...)
					}
					if !errors.Is(err, store.ErrInvalidEvent) {
						t.Fatalf("want a typed invalid-event error, got %v", err)
					}
					if after := dump(t, s.Path()); after != before {
						t.Errorf("a refused append changed the file:\n%s", cmp.Diff(before, after))
					}
					return
				}
				if decodeErr != nil {
					t.Fatalf("valid vector refused: %v", decodeErr)
				}
				if len(events) == 0 {
					// validBatchEmpty: nothing to append is refused, not stored.
					if _, err := s.Append(ctx, "default", "vector", store.Any); !errors.Is(err, store.ErrInvalidEvent) {
						t.Fatalf("empty append: %v", err)
					}
					return
				}
				res, err := s.Append(ctx, "default", "vector", store.Any, events...)
				if err != nil {
					t.Fatalf("append: %v", err)
				}
				got := drivertest.ReadStream(t, s, "default", "vector")
				if diff := cmp.Diff(res.Events, got); diff != "" {
					t.Errorf("read back (-appended +read):\n%s", diff)
				}
				for i, e := range events {
					g := got[i]
					if g.ID != e.ID || g.Source != e.Source || g.Type != e.Type || string(g.Data) != string(e.Data) ||
						g.DataSchema != e.DataSchema || !g.Time.Equal(e.Time) && !e.Time.IsZero() ||
						!cmp.Equal(g.Extensions, e.Extensions) {
						t.Errorf("event %d lost attributes:\n in  %+v\n got %+v", i, e, g)
					}
				}
			})
		}
	}
}

func TestHostileStreamIDs(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	if _, err := s.Append(ctx, "default", "existing", store.Any, drivertest.Event(t, "t", 1)); err != nil {
		t.Fatal(err)
	}
	stored := []string{"'; DROP TABLE events;--", "%", "_", "a%b_c", `"quoted"`, "ünïcødé/🙂", strings.Repeat("x", 255)}
	for _, id := range stored {
		t.Run(fmt.Sprintf("stored %.20q", id), func(t *testing.T) {
			e := drivertest.Event(t, "t", map[string]string{"stream": id})
			if _, err := s.Append(ctx, "default", id, store.NoStream, e); err != nil {
				t.Fatalf("append: %v", err)
			}
			got := drivertest.ReadStream(t, s, "default", id)
			if len(got) != 1 || got[0].Stream != id {
				t.Fatalf("read back %d events, stream %q", len(got), got[0].Stream)
			}
			// LIKE-style wildcards must not match other streams.
			var n int
			for si, err := range s.Streams(ctx, "default") {
				if err != nil {
					t.Fatal(err)
				}
				if si.Stream == id {
					n++
				}
			}
			if n != 1 {
				t.Errorf("stream listed %d times", n)
			}
		})
	}
	refused := map[string]string{
		"empty":            "",
		"NUL":              "a\x00b",
		"10 KB":            strings.Repeat("x", 10<<10),
		"256 bytes":        strings.Repeat("x", 256),
		"leading space":    " a",
		"trailing space":   "a ",
		"trailing tab":     "a\t",
		"invalid UTF-8":    "a\xffb",
		"only white":       "   ",
		"trailing nbspace": "a\u00a0",
		"newline":          "x\ny", // control characters cannot travel as headers
	}
	for name, id := range refused {
		t.Run("refused "+name, func(t *testing.T) {
			before := dump(t, s.Path())
			_, err := s.Append(ctx, "default", id, store.Any, drivertest.Event(t, "t", 1))
			var ie *envelope.InvalidError
			if !errors.As(err, &ie) || ie.Field != "stream" {
				t.Fatalf("want an InvalidError on field stream, got %v", err)
			}
			if after := dump(t, s.Path()); after != before {
				t.Error("a refused append changed the file")
			}
		})
	}
}

func TestOversizedData(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, &store.Options{MaxDataBytes: 1000})
	before := dump(t, s.Path())
	big := drivertest.Event(t, "t", nil)
	big.Data = []byte(`"` + strings.Repeat("x", 999) + `"`) // 1001 bytes
	_, err := s.Append(ctx, "default", "s", store.Any, drivertest.Event(t, "t", 1), big)
	var te *envelope.TooLargeError
	if !errors.As(err, &te) || !errors.Is(err, store.ErrTooLarge) || te.Field != "data" || te.Limit != 1000 || te.Index != 1 {
		t.Fatalf("want TooLargeError on data of event 1 with limit 1000, got %v", err)
	}
	if !strings.Contains(err.Error(), "1000") {
		t.Errorf("message does not name the limit: %v", err)
	}
	if after := dump(t, s.Path()); after != before {
		t.Error("a refused append changed the file")
	}
	exact := drivertest.Event(t, "t", nil)
	exact.Data = []byte(`"` + strings.Repeat("x", 998) + `"`) // 1000 bytes: the limit is inclusive
	if _, err := s.Append(ctx, "default", "s", store.Any, exact); err != nil {
		t.Fatalf("data at the limit: %v", err)
	}
	// The limit is measured on the data as stored: white space that
	// compaction removes does not count.
	spaced := drivertest.Event(t, "t", nil)
	spaced.Data = []byte("[" + strings.Repeat(" ", 2000) + "1]")
	if _, err := s.Append(ctx, "default", "s", store.Any, spaced); err != nil {
		t.Fatalf("compactable data: %v", err)
	}
}

func TestInvalidDataRefused(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	before := dump(t, s.Path())
	bad := drivertest.Event(t, "t", nil)
	bad.Data = []byte(`{"unterminated":`)
	_, err := s.Append(ctx, "default", "s", store.Any, bad)
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) || ie.Field != "data" {
		t.Fatalf("want InvalidError on data, got %v", err)
	}
	mismatch := drivertest.Event(t, "t", 1)
	mismatch.Stream = "other"
	if _, err := s.Append(ctx, "default", "s", store.Any, mismatch); !errors.As(err, &ie) || ie.Field != "subject" {
		t.Fatalf("want InvalidError on subject, got %v", err)
	}
	if after := dump(t, s.Path()); after != before {
		t.Error("a refused append changed the file")
	}
}
