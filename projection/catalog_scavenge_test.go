package projection_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestCatalogRebuildAfterScavenge: after a scavenge removed what the
// deletes and truncates allow, the live catalog still equals the one
// folded from what the streams retain, and a rebuild from the retained
// log equals it too.
func TestCatalogRebuildAfterScavenge(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 18))
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	appendLifecycleLog(t, s, rng, 300)
	r, err := projection.NewRunner(s, projection.Catalog(), &projection.RunnerOptions{BatchSize: 1 + rng.IntN(50)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.PublishAll(t, s)
	res, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed == 0 {
		t.Fatalf("the scavenge removed nothing (held back: %+v): the test proves nothing", res.HeldBack)
	}
	want := retainedCatalog(t, s)
	if diff := cmp.Diff(want, readCatalog(t, s, "")); diff != "" {
		t.Errorf("live catalog after scavenge (-want +got)\n%s", diff)
	}
	if _, err := replay.Rebuild(ctx, s, projection.Catalog(), &replay.Options{FromScratch: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, readCatalog(t, s, "")); diff != "" {
		t.Errorf("catalog rebuilt after scavenge (-want +got)\n%s", diff)
	}
}

// TestScavengeUnderAppendsAndARunningProjection: a scavenge that runs
// while appenders write and a projection follows the log never removes
// an event the projection had not passed: it applies every event
// appended.
func TestScavengeUnderAppendsAndARunningProjection(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := storetest.MustOpen(t, nil)
	seen := map[int64]bool{}
	var mu sync.Mutex
	p := projection.Projection{
		Name: "seen",
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			mu.Lock()
			defer mu.Unlock()
			seen[e.Position] = true
			return nil
		},
	}
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{BatchSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run(ctx) }()
	// A scavenge holds back for the projections the store knows, by
	// their checkpoints: wait for the runner's first one before the
	// scavenges start, or a runner slow to start would find its events
	// gone, as any projection started after a scavenge does.
	first, _ := envelope.New("t", map[string]int{"i": -1})
	first.Source = "/test"
	res, err := s.Append(ctx, "default", "warm-up", store.Any, first)
	if err != nil {
		t.Fatal(err)
	}
	if err := projection.WaitFor(ctx, s, "seen", res.Events[0].Position); err != nil {
		t.Fatal(err)
	}

	appenders, perAppender := 4, 150
	if testing.Short() {
		perAppender = 40
	}
	var wg sync.WaitGroup
	positions := make(chan int64, appenders*perAppender*2)
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(a)))
			stream := fmt.Sprintf("s-%d", a)
			for i := range perAppender {
				e, _ := envelope.New("t", map[string]int{"i": i})
				e.Source = "/test"
				res, err := s.Append(ctx, "default", stream, store.Any, e)
				if err != nil {
					t.Error(err)
					return
				}
				positions <- res.Events[0].Position
				if v := res.Version; rng.IntN(10) == 0 && v > 3 {
					tr, err := lifecycle.For(s).Truncate(ctx, "default", stream, v-1, store.Any)
					if err != nil {
						t.Error(err)
						return
					}
					positions <- tr.Events[0].Position
				}
			}
		}()
	}
	appended := make(chan struct{})
	go func() { wg.Wait(); close(appended) }()
	removed := int64(0)
	scavenges := 0
	for done := false; !done; {
		select {
		case <-appended:
			done = true
		default:
		}
		storetest.PublishAll(t, s)
		res, err := lifecycle.For(s).Scavenge(ctx, lifecycle.ScavengeOptions{BatchSize: 1 + int(seed%50)})
		if err != nil {
			t.Fatal(err)
		}
		removed += res.Removed
		scavenges++
	}
	close(positions)
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for {
		changed := s.Changed()
		cp, err := projection.Records(s).Checkpoint(ctx, "seen")
		if err != nil {
			t.Fatal(err)
		}
		if cp >= head {
			break
		}
		<-changed
	}
	cancel()
	<-runDone
	if removed == 0 {
		t.Fatalf("%d scavenges removed nothing: the test proves nothing", scavenges)
	}
	t.Logf("%d scavenges removed %d events", scavenges, removed)
	mu.Lock()
	defer mu.Unlock()
	for pos := range positions {
		if !seen[pos] {
			t.Errorf("the projection never saw position %d", pos)
		}
	}
}
