package pgdriver

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"hash/fnv"

	"github.com/eventlite/eventlite/store/internal/driver"
)

const consumerVersionSQL = `SELECT version, event_id FROM consumer_versions WHERE consumer = $1 AND tenant = $2 AND subject = $3 FOR UPDATE`

// ConsumerVersion locks the aggregate's row and reads it. When there is
// no row yet it takes the aggregate's transaction-scoped advisory lock
// and reads again: the second read is a new statement, so it sees a row
// that a transaction holding the lock before committed.
func (Exec) ConsumerVersion(ctx context.Context, q driver.Querier, k driver.AggregateKey) (int64, string, bool, error) {
	version, eventID, ok, err := consumerVersion(ctx, q, k)
	if ok || err != nil {
		return version, eventID, ok, err
	}
	if _, err := q.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, aggregateLockKey(k)); err != nil {
		return 0, "", false, err
	}
	return consumerVersion(ctx, q, k)
}

func consumerVersion(ctx context.Context, q driver.Querier, k driver.AggregateKey) (int64, string, bool, error) {
	var version int64
	var eventID string
	err := q.QueryRowContext(ctx, consumerVersionSQL, k.Consumer, k.Tenant, k.Subject).Scan(&version, &eventID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	return version, eventID, err == nil, err
}

// aggregateLockKey is the advisory lock key of one consumer's aggregate.
// Each part is length-prefixed, so that no two keys hash the same input.
// The key space is the database's, shared by every schema: a collision
// (another schema's aggregate of the same names, or a hash collision)
// only makes one transaction wait for another.
func aggregateLockKey(k driver.AggregateKey) int64 {
	h := fnv.New64a()
	h.Write([]byte("eventlite.consumer_version:"))
	for _, s := range []string{k.Consumer, k.Tenant, k.Subject} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return int64(h.Sum64())
}
