package envelope_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
)

// The CloudEvents JSON format conformance vectors live in the repository's
// testdata/conformance (copied unchanged from cloudevents/conformance; see
// SOURCE.md there), shared with the other packages that check them.

type conformanceFile struct {
	TestType string            `json:"testType"`
	Tests    []conformanceTest `json:"tests"`
}

type conformanceTest struct {
	ID                        string          `json:"id"`
	SampleID                  string          `json:"sampleId"`
	TestType                  string          `json:"testType"`
	Description               string          `json:"description"`
	Event                     json.RawMessage `json:"event"`
	Batch                     json.RawMessage `json:"batch"`
	SampleExtensionAttributes bool            `json:"sampleExtensionAttributes"`
	ExtensionConstraints      bool            `json:"extensionConstraints"`
}

// loadConformance reads every vector file and returns its tests with
// TestType resolved (the test's own or the file's default).
func loadConformance(tb testing.TB) []conformanceTest {
	tb.Helper()
	names := []string{"valid-events.json", "invalid-events.json", "valid-batches.json", "invalid-batches.json"}
	var all []conformanceTest
	seen := make(map[string]bool)
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "conformance", name))
		if err != nil {
			tb.Fatal(err)
		}
		var f conformanceFile
		if err := json.Unmarshal(b, &f); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		if len(f.Tests) == 0 {
			tb.Fatalf("%s: no tests", name)
		}
		for _, ct := range f.Tests {
			if ct.TestType == "" {
				ct.TestType = f.TestType
			}
			if seen[ct.ID] {
				tb.Fatalf("%s: vector id %q twice", name, ct.ID)
			}
			seen[ct.ID] = true
			all = append(all, ct)
		}
	}
	return all
}

// invalidWant is what the decoder must say about each invalid vector: the
// field it names and, for batches, the index of the offending event.
// Every invalid vector must have an entry, so a new vector cannot pass
// unexamined.
var invalidWant = map[string]struct {
	field string
	index int
}{
	"invalidNoSpecVersion":             {"specversion", -1},
	"invalidNoId":                      {"id", -1},
	"invalidNoType":                    {"type", -1},
	"invalidNoSource":                  {"source", -1},
	"invalidTimeGarbage":               {"time", -1},
	"invalidTimeToMinute":              {"time", -1},
	"invalidTimeOffsetX":               {"time", -1},
	"invalidTimeOffsetOutOfRange":      {"time", -1},
	"invalidTimeOffsetNonInteger":      {"time", -1},
	"invalidTimeOffsetHourOnly":        {"time", -1},
	"invalidEmptyId":                   {"id", -1},
	"invalidEmptyType":                 {"type", -1},
	"invalidEmptySource":               {"source", -1},
	"invalidEmptySpecVersion":          {"specversion", -1},
	"invalidUnknownSpecVersion":        {"specversion", -1},
	"invalidNonRfc2046DataContentType": {"datacontenttype", -1},
	"invalidEmptyDataContentType":      {"datacontenttype", -1},
	"invalidEmptyDataSchema":           {"dataschema", -1},
	"invalidEmptySubject":              {"subject", -1},
	"invalidNumericId":                 {"id", -1},
	"invalidObjectId":                  {"id", -1},
	"invalidCapitalizedExtension":      {"MyExtension", -1},
	"invalidPunctuatedExtension":       {"my.extension", -1},
	"invalidNonIntegerExtensionValue":  {"my.extension", -1},
	"invalidBothDataAndDataBase64":     {"data", -1},

	"invalidBatchMixedSpecVersions":           {"specversion", 1},
	"invalidBatchContainingInvalidCloudEvent": {"id", 0},
	"invalidBatchContainingNonObject":         {"event", 0},
}

// TestConformance runs every CloudEvents JSON format conformance vector.
// Nothing is skipped: vectors marked sampleExtensionAttributes carry their
// extensions in CloudEvents' JSON forms (integer, boolean, string), which
// the decoder keeps as int32, bool and string without definitions.
func TestConformance(t *testing.T) {
	tests := loadConformance(t)
	counts := make(map[string]int)
	for _, ct := range tests {
		counts[ct.TestType]++
		t.Run(ct.ID, func(t *testing.T) {
			switch ct.TestType {
			case "ValidSingleEvent":
				e, err := envelope.DecodeJSON(ct.Event, 0)
				if err != nil {
					t.Fatalf("DecodeJSON refused a valid event: %v", err)
				}
				checkAttributes(t, ct.Event, e)
				// A decoded event also passes Prepare unchanged apart
				// from the defaults it fills.
				p := e.Clone()
				if err := p.Prepare(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), 0); err != nil {
					t.Fatalf("Prepare of a decoded valid event: %v", err)
				}
				checkAttributes(t, ct.Event, p)

			case "ValidBatch":
				evs, err := envelope.DecodeBatchJSON(ct.Batch, 0)
				if err != nil {
					t.Fatalf("DecodeBatchJSON refused a valid batch: %v", err)
				}
				var raws []json.RawMessage
				if err := json.Unmarshal(ct.Batch, &raws); err != nil {
					t.Fatal(err)
				}
				if len(evs) != len(raws) {
					t.Fatalf("decoded %d events, want %d", len(evs), len(raws))
				}
				for i := range raws {
					checkAttributes(t, raws[i], evs[i])
				}
				if ct.ID == "validBatchMinimal2" {
					// The one departure from the vectors: this batch holds
					// the id "minimal" twice. The envelope decoder accepts
					// it (ids are unique per tenant, which only the store
					// can judge), but store.Append refuses a batch that
					// repeats an id, on purpose: event ids are unique.
					if evs[0].ID != evs[1].ID {
						t.Fatalf("vector changed: ids %q and %q", evs[0].ID, evs[1].ID)
					}
				}

			case "InvalidSingleEvent":
				_, err := envelope.DecodeJSON(ct.Event, 0)
				checkInvalid(t, ct.ID, err)

			case "InvalidBatch":
				evs, err := envelope.DecodeBatchJSON(ct.Batch, 0)
				if evs != nil {
					t.Errorf("DecodeBatchJSON returned %d events with its error", len(evs))
				}
				checkInvalid(t, ct.ID, err)

			default:
				t.Fatalf("unknown test type %q", ct.TestType)
			}
		})
	}
	// Guard against a vector file that silently stopped loading.
	want := map[string]int{"ValidSingleEvent": 10, "InvalidSingleEvent": 25, "ValidBatch": 5, "InvalidBatch": 3}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("vector counts (-want +got):\n%s", diff)
	}
}

// TestConformanceSequence feeds all valid vectors, single events and
// batches, through DecodeSequence as one stream.
func TestConformanceSequence(t *testing.T) {
	var in bytes.Buffer
	var want []json.RawMessage
	for _, ct := range loadConformance(t) {
		switch ct.TestType {
		case "ValidSingleEvent":
			in.Write(ct.Event)
			want = append(want, ct.Event)
		case "ValidBatch":
			in.Write(ct.Batch)
			var raws []json.RawMessage
			if err := json.Unmarshal(ct.Batch, &raws); err != nil {
				t.Fatal(err)
			}
			want = append(want, raws...)
		default:
			continue
		}
		in.WriteString("\n\t \n")
	}
	got, err := envelope.DecodeSequence(&in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("decoded %d events, want %d", len(got), len(want))
	}
	for i := range want {
		checkAttributes(t, want[i], got[i])
	}
}

func checkInvalid(t *testing.T, id string, err error) {
	t.Helper()
	want, ok := invalidWant[id]
	if !ok {
		t.Fatalf("no expectation for invalid vector %q: add it to invalidWant", id)
	}
	if err == nil {
		t.Fatal("accepted an invalid vector")
	}
	if !errors.Is(err, envelope.ErrInvalidEvent) {
		t.Errorf("errors.Is(%v, ErrInvalidEvent) = false", err)
	}
	var ie *envelope.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not an *InvalidError", err, err)
	}
	if ie.Field == "" || ie.Reason == "" {
		t.Errorf("InvalidError without field or reason: %+v", ie)
	}
	if ie.Field != want.field || ie.Index != want.index {
		t.Errorf("got field %q index %d, want field %q index %d (%v)", ie.Field, ie.Index, want.field, want.index, err)
	}
}

// checkAttributes compares every attribute the vector gives with the
// decoded event. Attributes the vector leaves out or sets to null may be
// filled by defaults, so they are not compared; time is compared as an
// instant.
func checkAttributes(t *testing.T, vector json.RawMessage, e envelope.Event) {
	t.Helper()
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(vector, &attrs); err != nil {
		t.Fatal(err)
	}
	if len(attrs) == 0 {
		t.Fatal("vector has no attributes")
	}
	ct := ""
	if r, ok := attrs["datacontenttype"]; ok {
		_ = json.Unmarshal(r, &ct)
	}
	for name, r := range attrs {
		if string(r) == "null" {
			continue
		}
		var want any
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		var got any
		switch name {
		case "specversion":
			got = envelope.SpecVersion
		case "id":
			got = e.ID
		case "source":
			got = e.Source
		case "type":
			got = e.Type
		case "subject":
			got = e.Stream
		case "datacontenttype":
			got = e.DataContentType
		case "dataschema":
			got = e.DataSchema
		case "time":
			wt, err := time.Parse(time.RFC3339Nano, want.(string))
			if err != nil {
				t.Fatalf("vector time: %v", err)
			}
			if !wt.Equal(e.Time) {
				t.Errorf("time: got %v, want the instant %v", e.Time, wt)
			}
			if e.Time.Location() != time.UTC {
				t.Errorf("time %v is not in UTC", e.Time)
			}
			continue
		case "data":
			if envelope.IsJSONContentType(ct) {
				var buf bytes.Buffer
				if err := json.Compact(&buf, r); err != nil {
					t.Fatal(err)
				}
				want, got = buf.String(), string(e.Data)
			} else {
				got = string(e.Data)
			}
		case "data_base64":
			d, err := base64.StdEncoding.DecodeString(want.(string))
			if err != nil {
				t.Fatal(err)
			}
			want, got = string(d), string(e.Data)
		default:
			// An extension: JSON integers are int32, strings and
			// booleans stay as they are.
			if n, ok := want.(json.Number); ok {
				i, err := n.Int64()
				if err != nil {
					t.Fatalf("extension %s: %v", name, err)
				}
				want = int32(i)
			}
			v, ok := e.Extensions[name]
			if !ok {
				t.Errorf("extension %s missing; extensions: %v", name, e.Extensions)
				continue
			}
			got = v
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("attribute %s (-want +got):\n%s", name, diff)
		}
	}
	// Nothing the vector does not give shows up as an extension.
	for name := range e.Extensions {
		if _, ok := attrs[name]; !ok {
			t.Errorf("extension %s not in the vector", name)
		}
	}
}
