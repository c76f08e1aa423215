package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// BenchmarkReadByTagVsStream reads the 100 events that carry one tag
// among many thousands (EVENTLITE_BENCH_EVENTS, default 200,000) and,
// in the same loop, a stream of 100 events, and reports the ratio of
// their times (x_stream: 1 means as fast as the stream read). The tag
// read is served by the tag index, so the ratio does not grow with the
// log.
func BenchmarkReadByTagVsStream(b *testing.B) {
	ctx := context.Background()
	total := 200_000
	s := storetest.MustOpen(b, nil)
	batch := make([]envelope.Event, 0, 1000)
	rare := 0
	for i := 0; i < total; i += 1000 {
		batch = batch[:0]
		for j := range 1000 {
			e, _ := envelope.New("t", map[string]int{"i": i + j})
			e.Source = "/bench"
			e.Tags = []string{fmt.Sprint("common:", (i+j)%10)}
			if (i+j)%(total/100) == 0 {
				e.Tags = append(e.Tags, "rare")
				rare++
			}
			batch = append(batch, e)
		}
		if _, err := s.Append(ctx, "default", fmt.Sprint("s-", i/1000), store.Any, batch...); err != nil {
			b.Fatal(err)
		}
	}
	hundred := make([]envelope.Event, 100)
	for i := range hundred {
		hundred[i], _ = envelope.New("t", map[string]int{"i": i})
		hundred[i].Source = "/bench"
	}
	if _, err := s.Append(ctx, "default", "hundred", store.NoStream, hundred...); err != nil {
		b.Fatal(err)
	}
	q := store.ReadAllOptions{Tenant: "default", Query: store.Query{Items: []store.QueryItem{{Tags: []string{"rare"}}}}}
	b.ResetTimer()
	var tagTime, streamTime time.Duration
	for range b.N {
		t0 := time.Now()
		n := 0
		for _, err := range s.ReadAll(ctx, q) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		t1 := time.Now()
		m := 0
		for _, err := range s.ReadStream(ctx, "default", "hundred", store.ReadStreamOptions{}) {
			if err != nil {
				b.Fatal(err)
			}
			m++
		}
		t2 := time.Now()
		if n != rare || m != 100 {
			b.Fatalf("read %d tagged (want %d) and %d stream events", n, rare, m)
		}
		tagTime += t1.Sub(t0)
		streamTime += t2.Sub(t1)
	}
	b.ReportMetric(float64(tagTime)/float64(b.N)/1e3, "us_tag_read")
	b.ReportMetric(float64(streamTime)/float64(b.N)/1e3, "us_stream_read")
	b.ReportMetric(float64(tagTime)/float64(streamTime), "x_stream")
}
