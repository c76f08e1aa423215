package backup_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/lifecycle"
)

// TestRestoreMovesTheStatsGeneration: a store that keeps a tenant's
// counts (Inventory.Stats adds what was appended after its head while the
// file's stats generation holds) stays open while a backup is restored
// under it. The restored file's generation is the backup's, moved by
// the restore's own writes; had the store's kept generation been reached
// again by that (the file moved k times between the backup and the
// restore, k = 0..4), the store would add nothing to counts that include
// events the restore took away. Every Stats after the restore must equal
// a fresh count, read by a second store on the file.
func TestRestoreMovesTheStatsGeneration(t *testing.T) {
	ctx := context.Background()
	for k := range 5 {
		t.Run(fmt.Sprintf("moves=%d", k), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "live.db")
			s, err := store.Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			appendN(t, s, "default", "a", 10)
			appendN(t, s, "default", "b", 5)
			inv := s.Inventory()
			if _, err := inv.Stats(ctx, "default"); err != nil {
				t.Fatal(err)
			}
			bak := filepath.Join(dir, "backup.db")
			if _, err := backup.Create(ctx, path, bak, nil); err != nil {
				t.Fatal(err)
			}
			for i := range k {
				if _, err := lifecycle.For(s).Truncate(ctx, "default", "a", int64(2+i), store.Any); err != nil {
					t.Fatal(err)
				}
			}
			appendN(t, s, "default", "b", 7) // versions 6-12: the restore takes them back
			appendN(t, s, "default", "c", 3) // a stream the backup lacks
			if _, err := inv.Stats(ctx, "default"); err != nil {
				t.Fatal(err)
			}
			if _, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			appendN(t, s, "default", "d", 2)
			got, err := inv.Stats(ctx, "default")
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := store.Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			want, err := fresh.Inventory().Stats(ctx, "default")
			if err != nil {
				t.Fatal(err)
			}
			if got.Events != want.Events || got.Streams != want.Streams || got.LastPosition != want.LastPosition {
				t.Errorf("after the restore the open store counts %d events in %d streams (last %d); a fresh count says %d in %d (last %d)",
					got.Events, got.Streams, got.LastPosition, want.Events, want.Streams, want.LastPosition)
			}
		})
	}
}
