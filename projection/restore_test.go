package projection_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestConsumerAfterRestore: a store is restored from an older backup
// after its stream had gone from version 10 to 15. Downstream, three
// consumers of its events: one applied all 15, one only up to 10, one
// only up to 5. The new events after the restore are applied by each,
// in order: none is classed stale (the versions are new), none waits
// for the lost versions (the restore's event announces them gone), and
// Apply never sees the store's own event.
func TestConsumerAfterRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "orders.db")
	up := storetest.MustOpenPath(t, path, nil)
	appendEvents := func(n int) []envelope.Event {
		evs := make([]envelope.Event, n)
		for i := range evs {
			evs[i] = envelope.Event{Source: "/orders", Type: "order.noted", Data: []byte(`{}`)}
		}
		r, err := up.Append(ctx, "default", "order-1", store.Any, evs...)
		if err != nil {
			t.Fatal(err)
		}
		return r.Events
	}
	before := appendEvents(10)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	lost := appendEvents(5)
	if _, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	fresh := appendEvents(3)
	var after []envelope.Event // the restore's event, then the new ones
	for e, err := range up.ReadStream(ctx, "default", "order-1", store.ReadStreamOptions{From: 11}) {
		if err != nil {
			t.Fatal(err)
		}
		after = append(after, e)
	}
	if len(after) != 4 || after[0].Type != store.TypeStreamRestored || after[0].StreamVersion != 16 || fresh[0].StreamVersion != 17 {
		t.Fatalf("after the restore the stream reads %d events from version 11, the first %q at %d, new ones from %d; want the restore's event at 16, then 17",
			len(after), after[0].Type, after[0].StreamVersion, fresh[0].StreamVersion)
	}

	down := storetest.MustOpen(t, nil)
	for _, tc := range []struct {
		name string
		seen []envelope.Event // delivered before the restore
		// order of delivery after the restore: the new events may come
		// before the restore's event (another broker subject).
		newFirst bool
	}{
		{"saw_all", append(append([]envelope.Event{}, before...), lost...), false},
		{"saw_backup", before, false},
		{"saw_backup_new_first", before, true},
		{"saw_half", before[:5], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var applied []int64
			c, err := projection.NewConsumer(down, projection.ConsumerOptions{Name: tc.name, Apply: func(_ context.Context, _ *store.Tx, e envelope.Event) error {
				if e.Type != "order.noted" {
					return fmt.Errorf("Apply got %s: %w", e.Type, projection.ErrUninterpretable)
				}
				applied = append(applied, e.StreamVersion)
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			deliver := func(evs ...envelope.Event) {
				for _, e := range evs {
					if _, err := c.Handle(ctx, e); err != nil {
						t.Fatal(err)
					}
				}
			}
			deliver(tc.seen...)
			applied = nil
			if tc.newFirst {
				deliver(after[1:]...)
				deliver(after[0])
			} else {
				deliver(after...)
			}
			if len(tc.seen) == 5 {
				// The backup's own events 6-10 arrive late (redelivered).
				deliver(before[5:]...)
			}
			var want []int64
			if len(tc.seen) == 5 {
				want = []int64{6, 7, 8, 9, 10}
			}
			want = append(want, 17, 18, 19)
			if diff := cmp.Diff(want, applied); diff != "" {
				t.Fatalf("versions applied after the restore (-want +got):\n%s", diff)
			}
		})
	}
}
