package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// Group commit hands out consecutive, gap-free positions: concurrent
// appends (sharing transactions, a savepoint each), some refused in the
// middle of a group (a duplicate id, a conflict) and some creating the
// same new stream at once, leave positions 1..n with no gap and no
// duplicate, each append's consecutive, and the versions of every stream
// increasing with its positions. Each append reads the last position
// handed out again, so it sees its group's earlier appends and none that
// was rolled back.
func TestGroupCommitPositionsConsecutive(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	const writers, rounds = 24, 15
	var (
		mu      sync.Mutex
		results []store.AppendResult
		refused int
		created = map[string]int{} // new stream -> appends that created it
	)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				stream := fmt.Sprintf("w%d", w)
				expected := store.Any
				evs := make([]envelope.Event, 1+(w+r)%3)
				for i := range evs {
					evs[i] = evID(t, fmt.Sprintf("w%d-r%d-%d", w, r, i), "t", i)
				}
				switch r % 5 {
				case 1: // refused: the id of this writer's first event
					evs[len(evs)-1].ID = fmt.Sprintf("w%d-r0-0", w)
				case 2: // every writer creates the same new stream at once
					stream, expected = fmt.Sprintf("shared-%d", r), store.NoStream
				case 3: // a conflict: the stream is past version 0
					expected = store.NoStream
				}
				res, err := s.Append(ctx, "acme", stream, expected, evs...)
				mu.Lock()
				switch {
				case err == nil:
					results = append(results, res)
					if r%5 == 2 {
						created[stream]++
					}
				case r%5 == 1 && errors.As(err, new(*store.DuplicateError)),
					r%5 == 2 && errors.Is(err, store.ErrConflict),
					r%5 == 3 && errors.Is(err, store.ErrConflict):
					refused++
				default:
					t.Errorf("writer %d round %d: %v", w, r, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for stream, n := range created {
		if n != 1 {
			t.Errorf("%s was created by %d appends, want 1", stream, n)
		}
	}
	// Three rounds each of duplicates, of conflicts, and of creators that
	// lost the race to one winner.
	if want := 3*writers + 3*writers + 3*(writers-1); refused != want {
		t.Errorf("%d appends refused, want %d", refused, want)
	}
	slices.SortFunc(results, func(a, b store.AppendResult) int { return int(a.FirstPosition() - b.FirstPosition()) })
	next := int64(1)
	lastVersion := map[string]int64{}
	for _, res := range results {
		for i, e := range res.Events {
			if e.Position != next {
				t.Fatalf("%s: event %d at position %d, want %d (positions so far 1..%d)", res.Stream, i, e.Position, next, next-1)
			}
			if e.StreamVersion != lastVersion[res.Stream]+1 {
				t.Fatalf("%s: position %d has version %d after version %d", res.Stream, e.Position, e.StreamVersion, lastVersion[res.Stream])
			}
			lastVersion[res.Stream] = e.StreamVersion
			next++
		}
	}
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head != next-1 {
		t.Errorf("head %d, want %d: an append the results do not know of", head, next-1)
	}
}
