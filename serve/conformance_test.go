package serve_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type vector struct {
	ID    string          `json:"id"`
	Event json.RawMessage `json:"event"`
	Batch json.RawMessage `json:"batch"`
}

func loadVectors(t *testing.T, name string) []vector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "conformance", name))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tests []vector `json:"tests"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Tests) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return f.Tests
}

// sameAttributes checks that every non-null attribute of the vector came
// back equal: times as instants, data as JSON.
func sameAttributes(t *testing.T, want json.RawMessage, got map[string]any) {
	t.Helper()
	var w map[string]any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	for k, v := range w {
		if v == nil {
			continue
		}
		switch k {
		case "time":
			wt, _ := time.Parse(time.RFC3339Nano, v.(string))
			gt, err := time.Parse(time.RFC3339Nano, fmt.Sprint(got[k]))
			if err != nil || !wt.Equal(gt) {
				t.Errorf("time %v, want %v", got[k], v)
			}
		default:
			wb, _ := json.Marshal(v)
			gb, _ := json.Marshal(got[k])
			if string(wb) != string(gb) {
				t.Errorf("%s: %s, want %s", k, gb, wb)
			}
		}
	}
}

// The CloudEvents JSON conformance vectors, posted in structured and in
// batch mode, each in a tenant of its own: valid ones are stored and read
// back equal, invalid ones refused with nothing stored. The one
// departure: validBatchMinimal2 holds one id twice, which is 409.
func TestConformanceVectors(t *testing.T) {
	ts := newServer(t, nil)
	n := 0
	tenant := func() string { n++; return fmt.Sprintf("v%d", n) }
	readAll := func(tenant string) []map[string]any {
		return parseBatch(t, ts.do("GET", "/v1/tenants/"+tenant+"/events", nil))
	}
	for _, v := range loadVectors(t, "valid-events.json") {
		t.Run(v.ID, func(t *testing.T) {
			// Structured, and as a batch of one.
			for _, mode := range []struct {
				ct   string
				body []byte
			}{{ctStructured, v.Event}, {ctBatch, batch(v.Event)}} {
				tn := tenant()
				r := ts.do("POST", streamEvents(tn, "tests"), mode.body, "Content-Type", mode.ct)
				if r.status != 201 {
					t.Fatalf("%s: %d %s", mode.ct, r.status, r.body)
				}
				got := readAll(tn)
				if len(got) != 1 {
					t.Fatalf("%s: %d events", mode.ct, len(got))
				}
				sameAttributes(t, v.Event, got[0])
			}
		})
	}
	for _, v := range loadVectors(t, "valid-batches.json") {
		t.Run(v.ID, func(t *testing.T) {
			tn := tenant()
			r := ts.do("POST", streamEvents(tn, "tests"), v.Batch, "Content-Type", ctBatch)
			var raws []json.RawMessage
			if err := json.Unmarshal(v.Batch, &raws); err != nil {
				t.Fatal(err)
			}
			switch {
			case v.ID == "validBatchMinimal2":
				r.wantProblem(t, 409, "duplicate-event-id")
				raws = nil
			case len(raws) == 0:
				if r.status != 200 {
					t.Fatalf("empty batch: %d %s", r.status, r.body)
				}
			case r.status != 201:
				t.Fatalf("%d %s", r.status, r.body)
			}
			got := readAll(tn)
			if len(got) != len(raws) {
				t.Fatalf("%d events stored, want %d", len(got), len(raws))
			}
			for i := range raws {
				sameAttributes(t, raws[i], got[i])
			}
		})
	}
	for _, v := range loadVectors(t, "invalid-events.json") {
		t.Run(v.ID, func(t *testing.T) {
			for _, mode := range []struct {
				ct   string
				body []byte
			}{{ctStructured, v.Event}, {ctBatch, batch(v.Event)}} {
				tn := tenant()
				ts.do("POST", streamEvents(tn, "tests"), mode.body, "Content-Type", mode.ct).wantProblem(t, 400, "invalid-event")
				if got := readAll(tn); len(got) != 0 {
					t.Errorf("%s: stored %d events", mode.ct, len(got))
				}
			}
		})
	}
	for _, v := range loadVectors(t, "invalid-batches.json") {
		t.Run(v.ID, func(t *testing.T) {
			tn := tenant()
			ts.do("POST", streamEvents(tn, "tests"), v.Batch, "Content-Type", ctBatch).wantProblem(t, 400, "invalid-event")
			if got := readAll(tn); len(got) != 0 {
				t.Errorf("stored %d events", len(got))
			}
		})
	}
	if h := ts.head(); h == 0 {
		t.Error("nothing stored")
	}
}
