package store

import (
	"context"
	"database/sql"
	"fmt"
)

// withWriter runs fn on the writer's connection outside any transaction
// (for the statements SQLite refuses inside one: VACUUM, a WAL
// checkpoint), holding the writer meanwhile: appends wait for it.
func (s *Store) withWriter(ctx context.Context, fn func(c *sql.Conn) error) error {
	if err := s.admitWrite(); err != nil {
		return err
	}
	defer s.inflight.Done()
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return fn(s.wconn.Conn)
}

// secureDelete turns SQLite's secure_delete on, or back to FAST, on the
// writer's connection: on, deleted content and freed pages are
// overwritten with zeros; FAST overwrites deleted content only where that
// costs no extra I/O. Calls nest (a scavenge and a Forget may overlap):
// it stays on until every caller that turned it on has turned it off.
func (s *Store) secureDelete(ctx context.Context, on bool) error {
	return s.withWriter(ctx, func(c *sql.Conn) error {
		was := s.w.secureRefs
		if on {
			s.w.secureRefs++
		} else if s.w.secureRefs > 0 {
			s.w.secureRefs--
		}
		if (was == 0) == (s.w.secureRefs == 0) {
			return nil // already in the state asked for
		}
		// Off is back to the writer's setting (see dsn).
		if err := s.ex.SetSecureDelete(ctx, c, s.w.secureRefs > 0); err != nil {
			s.w.secureRefs = was
			return fmt.Errorf("secure_delete: %w", mapErr(err))
		}
		return nil
	})
}

// withSecureDelete runs fn with secure_delete on (see secureDelete).
func (s *Store) withSecureDelete(ctx context.Context, fn func() error) (err error) {
	if err := s.secureDelete(ctx, true); err != nil {
		return err
	}
	defer func() {
		// Back to FAST for the appends that follow.
		if e := s.secureDelete(context.WithoutCancel(ctx), false); err == nil {
			err = e
		}
	}()
	return fn()
}

// vacuumChunk is how many free pages one incremental_vacuum gives back
// while it holds the writer: 1,024 (4 MiB of 4 KiB pages). Measured: one
// incremental_vacuum of 250 MB held a concurrent writer for 6 s.
const vacuumChunk = 1024

// reclaim gives the freed pages back to the file system (an incremental
// vacuum in chunks, releasing the writer between them, or a full VACUUM)
// and checkpoints the WAL with TRUNCATE, so that the bytes removed are
// neither in the file nor in its WAL. A checkpoint a reader kept from
// finishing sets res.CheckpointBlocked.
func (s *Store) reclaim(ctx context.Context, full bool, res *scavengeResult) error {
	if full {
		err := s.withWriter(ctx, func(c *sql.Conn) error {
			// VACUUM converts a file created before auto_vacuum was set.
			if err := s.ex.SetIncrementalVacuum(ctx, c); err != nil {
				return fmt.Errorf("scavenge: auto_vacuum: %w", mapErr(err))
			}
			if err := s.ex.Vacuum(ctx, c); err != nil {
				return fmt.Errorf("scavenge: vacuum: %w", mapErr(err))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for prev := int64(-1); !full; {
		var free int64
		var incremental bool
		err := s.withWriter(ctx, func(c *sql.Conn) error {
			var err error
			if incremental, err = s.ex.IncrementalVacuumOn(ctx, c); err != nil {
				return fmt.Errorf("scavenge: auto_vacuum: %w", mapErr(err))
			}
			if !incremental { // nothing to give back
				return nil
			}
			if err := s.ex.IncrementalVacuum(ctx, c, vacuumChunk); err != nil {
				return fmt.Errorf("scavenge: incremental_vacuum: %w", mapErr(err))
			}
			free, err = s.ex.FreePages(ctx, c)
			return err
		})
		if err != nil {
			return err
		}
		if !incremental || free == 0 || free == prev {
			break
		}
		prev = free
	}
	return s.withWriter(ctx, func(c *sql.Conn) error {
		busy, logFrames, done, err := s.ex.CheckpointWAL(ctx, c)
		if scavengeHooks.checkpoint != nil {
			busy, logFrames, done, err = scavengeHooks.checkpoint(busy, logFrames, done, err)
		}
		if err != nil {
			return fmt.Errorf("scavenge: wal_checkpoint: %w", mapErr(err))
		}
		if res.FreePages, err = s.ex.FreePages(ctx, c); err != nil {
			return fmt.Errorf("scavenge: freelist_count: %w", mapErr(err))
		}
		if busy && logFrames < 0 {
			// SQLite answers -1 frames when the checkpoint could not
			// start at all: another connection held the checkpoint lock.
			return fmt.Errorf("%w: scavenge: another connection was checkpointing the WAL at the same time (a second scavenge, or a replication tool such as Litestream); "+
				"what was removed stays removed: run the scavenge again once it is done", ErrBusy)
		}
		if busy {
			res.CheckpointBlocked = true
			return fmt.Errorf("scavenge: %d of %d WAL frames checkpointed; run the scavenge again once readers are done", done, logFrames)
		}
		return nil
	})
}

// scavengeHooks inject faults into a scavenge in tests: checkpoint
// replaces what the WAL checkpoint answered.
var scavengeHooks struct {
	checkpoint func(busy bool, logFrames, done int64, err error) (bool, int64, int64, error)
}
