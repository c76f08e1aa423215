package envelope_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
)

// benchEventJSON is a typical structured event: the core attributes,
// eventlite's extensions, two free extensions and a small JSON object.
func benchEventJSON(i int) []byte {
	return []byte(fmt.Sprintf(`{"specversion":"1.0","id":"01J9Z3K6Q8X2V4M5N7P9R1S3T%d","source":"https://orders.example.com/api",`+
		`"type":"com.example.order.placed","subject":"order-%06d","time":"2026-05-01T12:34:56.789012345Z",`+
		`"datacontenttype":"application/json","tenant":"acme","streamversion":%d,"position":"%d",`+
		`"correlationid":"corr-%d","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","priority":3,`+
		`"data":{"order_id":"order-%06d","customer":"cust-42","items":[{"sku":"A-1","qty":2,"cents":1999},{"sku":"B-7","qty":1,"cents":4500}],"total_cents":8498,"note":"leave at the door"}}`,
		i%10, i, i%50+1, i+1, i, i))
}

// BenchmarkDecodeJSON decodes structured events with DecodeJSON against
// json.Unmarshal of the same bytes into a map of raw members, the first
// step any structured decoder takes (x_raw = DecodeJSON time / raw time:
// lower is faster). Both sides run in the same benchmark on the same data.
func BenchmarkDecodeJSON(b *testing.B) {
	const n = 256
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = benchEventJSON(i)
	}
	b.Run("DecodeJSON", func(b *testing.B) {
		var rawDur, decDur time.Duration
		var rawOps, decOps int
		for b.Loop() {
			t0 := time.Now()
			for i := range 100 {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(evs[(rawOps+i)%n], &m); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			for i := range 100 {
				if _, err := envelope.DecodeJSON(evs[(decOps+i)%n], 0); err != nil {
					b.Fatal(err)
				}
			}
			t2 := time.Now()
			rawDur += t1.Sub(t0)
			decDur += t2.Sub(t1)
			rawOps += 100
			decOps += 100
		}
		b.ReportMetric(float64(decDur.Nanoseconds())/float64(decOps), "ns/event")
		b.ReportMetric(float64(decDur)/float64(rawDur), "x_raw")
	})
}

// BenchmarkPrepare prepares typical new events (what every append does
// before its transaction) against json.Valid of the same data, the least
// any append must do (x_raw = Prepare time / json.Valid time).
func BenchmarkPrepare(b *testing.B) {
	const n = 256
	src := make([]envelope.Event, n)
	for i := range src {
		e, err := envelope.DecodeJSON(benchEventJSON(i), 0)
		if err != nil {
			b.Fatal(err)
		}
		e.Position, e.StreamVersion = 0, 0
		src[i] = e
	}
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	evs := make([]envelope.Event, n)
	var rawDur, prepDur time.Duration
	var ops int
	for b.Loop() {
		copy(evs, src)
		t0 := time.Now()
		for i := range evs {
			if !json.Valid(evs[i].Data) {
				b.Fatal("invalid")
			}
		}
		t1 := time.Now()
		for i := range evs {
			if err := evs[i].Prepare(now, 0); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		rawDur += t1.Sub(t0)
		prepDur += t2.Sub(t1)
		ops += n
	}
	b.ReportMetric(float64(prepDur.Nanoseconds())/float64(ops), "ns/event")
	b.ReportMetric(float64(prepDur)/float64(rawDur), "x_raw")
}
