package serve

import "testing"

// A live reader whose queue is full is dropped, its channel closed after
// what it had queued, while a reader that keeps up gets every batch: the
// hub never blocks on a slow reader and never buffers without bound.
func TestHubDropsAReaderThatFallsBehind(t *testing.T) {
	h := &hub{subs: make(map[string]map[*subscription]struct{})}
	slow := &subscription{ch: make(chan []fed, hubBuffer)}
	fast := &subscription{ch: make(chan []fed, hubBuffer)}
	h.subs[""] = map[*subscription]struct{}{slow: {}, fast: {}}

	got := 0
	for i := range hubBuffer + 1 {
		h.broadcast([]fed{{}})
		select {
		case <-fast.ch:
			got++
		default:
			t.Fatalf("batch %d did not reach the reader that keeps up", i)
		}
		if dropped := h.wasDropped(slow); dropped != (i == hubBuffer) {
			t.Fatalf("after %d batches the slow reader dropped=%v", i+1, dropped)
		}
	}
	if got != hubBuffer+1 || h.wasDropped(fast) {
		t.Fatalf("the reader that keeps up got %d of %d batches (dropped=%v)", got, hubBuffer+1, h.wasDropped(fast))
	}
	if _, ok := h.subs[""][slow]; ok {
		t.Fatal("the dropped reader is still subscribed")
	}
	queued := 0
	for range slow.ch {
		queued++
	}
	if queued != hubBuffer {
		t.Fatalf("the dropped reader's channel held %d batches before closing, want %d", queued, hubBuffer)
	}
}
