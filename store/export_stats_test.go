package store

import (
	"context"
	"database/sql"
)

// FullStats counts tenant's Stats in full, without the kept counts: the
// reference the kept ones must equal. It returns Events, Streams,
// LastPosition and AppendedLastMinute.
func FullStats(ctx context.Context, s *Store, tenant string) ([4]int64, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return [4]int64{}, err
	}
	defer func() { _ = tx.Rollback() }()
	f, err := s.ex.InventoryStats(ctx, tx, tenant, s.opts.Now().Add(-60e9).UnixNano(), false)
	return [4]int64{f.Events, f.Streams, f.LastPosition, f.RecentEvents}, err
}

// StatsKept reports whether the store keeps counts of tenant and at which
// generation.
func StatsKept(s *Store, tenant string) (generation int64, ok bool) {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	e, ok := s.stats.m[tenant]
	return e.generation, ok
}
