package store

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// checkpoint returns the position the named projection has applied up
// to, 0 when it has none, from the read pool.
func (s *Store) checkpoint(ctx context.Context, name string) (int64, error) {
	pos, err := s.ex.Checkpoint(ctx, s.rdb, name)
	return pos, mapErr(err)
}

// Checkpoint reads a checkpoint inside an Update closure.
func (tx txBook) Checkpoint(ctx context.Context, name string) (int64, error) {
	if err := tx.check(); err != nil {
		return 0, err
	}
	s := tx.s
	pos, err := s.ex.Checkpoint(ctx, s.wconn, name)
	return pos, mapErr(err)
}

// SetCheckpoint moves a checkpoint inside an Update closure, in the
// transaction of the reader's own writes. With a lease it is fenced: it
// fails with ErrStaleFence unless the lease is current. A nil lease writes
// unfenced (on-demand readers that hold no lease).
func (tx txBook) SetCheckpoint(ctx context.Context, name string, position int64, lease *Lease) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	var fence *driver.Fence
	if lease != nil {
		f := lease.fence()
		fence = &f
	}
	ok, err := s.ex.SetCheckpoint(ctx, s.wconn, name, position, fence, tx.now)
	if err != nil {
		return fmt.Errorf("set checkpoint %q: %w", name, mapErr(err))
	}
	if !ok {
		return lease.staleFence()
	}
	return nil
}

// checkpoints lists every checkpoint by name.
func (s *Store) checkpoints(ctx context.Context) (map[string]int64, error) {
	out, err := s.ex.Checkpoints(ctx, s.rdb)
	return out, mapErr(err)
}
