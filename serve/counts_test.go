package serve_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// countsFixture fills tenant default with stream s (4 events, truncated
// before 3: version 5, events 3 to 5 readable), stream t (2 events, then
// deleted: nothing readable) and stream u (1 event): 4 readable events in
// 2 streams.
func countsFixture(t *testing.T, ts *testServer) {
	t.Helper()
	ts.appendN("default", "s", 4, "t")
	if r := ts.do("POST", streamPath+"s/truncate", []byte(`{"before":3}`), "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("truncate: %d %s", r.status, r.body)
	}
	ts.appendN("default", "t", 2, "t")
	if r := ts.do("DELETE", streamPath+"t", nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	ts.appendN("default", "u", 1, "t")
}

// TestEventCounts: a count of events means one thing wherever it is
// shown: the events reads return. A truncated stream's events field is
// what GET .../events returns (3), not its version (5); /stats sums the
// streams listed (a deleted stream's events are not counted), and counts
// those streams.
func TestEventCounts(t *testing.T) {
	ts := newServer(t, nil)
	countsFixture(t, ts)

	read := ts.do("GET", streamEvents("default", "s"), nil)
	var readable []any
	if err := json.Unmarshal(read.body, &readable); err != nil || read.status != 200 {
		t.Fatalf("read: %d %s", read.status, read.body)
	}
	info := ts.do("GET", streamPath+"s", nil).json(t)
	if info["events"] != float64(len(readable)) || info["events"] != float64(3) || info["version"] != float64(5) {
		t.Errorf("stream s: events %v version %v, want 3 (what a read returns: %d) and 5", info["events"], info["version"], len(readable))
	}
	list := ts.do("GET", "/v1/tenants/default/streams", nil).json(t)
	got := map[string]any{}
	for _, s := range list["streams"].([]any) {
		m := s.(map[string]any)
		got[m["stream"].(string)] = m["events"]
	}
	if fmt.Sprint(got) != "map[s:3 u:1]" {
		t.Errorf("listed streams' events %v, want map[s:3 u:1]", got)
	}
	for _, path := range []string{"/v1/tenants/default/stats", "/v1/stats"} {
		st := ts.do("GET", path, nil).json(t)
		if st["events"] != float64(4) || st["streams"] != float64(2) {
			t.Errorf("%s: events %v streams %v, want 4 and 2 (the streams listed and their readable events)", path, st["events"], st["streams"])
		}
	}
}

// TestBrowserEventCounts: the page shows the same counts: the overview's
// events and streams are /stats', and a truncated stream's page says 3
// events (its version, 5, beside them).
func TestBrowserEventCounts(t *testing.T) {
	b := newBrowser(t)
	ts := newServer(t, nil)
	countsFixture(t, ts)
	b.open(ts.url + "/")
	b.wait("the overview's counts", textOf("#ov-events")+` === "4" && `+textOf("#ov-streams")+` === "2"`)
	b.hash("#/stream/s")
	b.wait("the stream's count", textOf("#stream-info")+`.startsWith("3 events (version 5)")`)
}

// TestBrowserEventCountsLive: the stream page keeps counting what reads
// return as events arrive live: an append adds one, a truncate brings
// the count down to the versions it keeps.
func TestBrowserEventCountsLive(t *testing.T) {
	b := newBrowser(t)
	ts := newServer(t, nil)
	ts.appendN("default", "s", 2, "t")
	b.open(ts.url + "/#/stream/s")
	b.wait("the stream's count", textOf("#stream-info")+`.startsWith("2 events (version 2)")`)
	b.wait("the live read", rows("#stream-events")+` === 2`)
	ts.appendN("default", "s", 2, "u")
	b.wait("the appended events", textOf("#stream-info")+`.startsWith("4 events (version 4), the newest")`)
	if r := ts.do("POST", streamPath+"s/truncate", []byte(`{"before":3}`), "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("truncate: %d %s", r.status, r.body)
	}
	b.wait("the truncate", textOf("#stream-info")+`.startsWith("3 events (version 5), the newest")`)
}
