package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// LoadSnapshot reads by the snapshots' primary key.
func (x Exec[D]) LoadSnapshot(ctx context.Context, q driver.ReadQuerier, tenant, stream string, schemaVersion int) (driver.SnapshotRow, bool, error) {
	snap := driver.SnapshotRow{SchemaVersion: schemaVersion}
	err := q.QueryRowContext(ctx, x.bind(`SELECT version, state, created_at FROM snapshots
		WHERE tenant = ? AND stream_id = ? AND schema_version = ?`), tenant, stream, schemaVersion).Scan(&snap.Version, &snap.State, &snap.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.SnapshotRow{}, false, nil
	}
	if err != nil {
		return driver.SnapshotRow{}, false, err
	}
	return snap, true, nil
}

// SaveSnapshot upserts, keeping the newer version.
func (x Exec[D]) SaveSnapshot(ctx context.Context, q driver.Querier, tenant, stream string, snap driver.SnapshotRow) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO snapshots (tenant, stream_id, schema_version, version, state, created_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, stream_id, schema_version) DO UPDATE
		SET version = EXCLUDED.version, state = EXCLUDED.state, created_at = EXCLUDED.created_at
		WHERE EXCLUDED.version > snapshots.version`),
		tenant, stream, snap.SchemaVersion, snap.Version, snap.State, snap.CreatedAt)
	return err
}

// SetProjectionStatus upserts the projections row.
func (x Exec[D]) SetProjectionStatus(ctx context.Context, q driver.Querier, name, status, detail string, now int64) error {
	_, err := q.ExecContext(ctx, x.bind(`INSERT INTO projections (name, status, detail, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET status = EXCLUDED.status, detail = EXCLUDED.detail, updated_at = EXCLUDED.updated_at`),
		name, status, detail, now)
	return err
}

// Projections reads the projections rows with their checkpoint, open
// quarantine count and lease, in one statement; the lease's figures by
// the engine's clock (Dialect.NowMillis).
func (x Exec[D]) Projections(ctx context.Context, q driver.ReadQuerier, name string) ([]driver.ProjectionRow, error) {
	d := x.dialect()
	rows, err := q.QueryContext(ctx, x.bind(`SELECT p.name, p.status, p.detail, p.updated_at,
		COALESCE((SELECT position FROM checkpoints c WHERE c.name = p.name), 0),
		(SELECT count(*) FROM quarantine q WHERE q.consumer = p.name AND q.resolved_at IS NULL),
		COALESCE(l.owner, ''), COALESCE(l.owner <> '' AND l.expires_at > `+d.NowMillis()+`, false),
		COALESCE(`+d.NowMillis()+` - l.expires_at, 0), COALESCE(l.ttl_ms, 0)
		FROM projections p LEFT JOIN leases l ON l.resource = 'projection:' || p.name
		WHERE ? = '' OR p.name = ?
		ORDER BY p.name`), name, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.ProjectionRow
	for rows.Next() {
		var r driver.ProjectionRow
		if err := rows.Scan(&r.Name, &r.Status, &r.Detail, &r.UpdatedAt, &r.Checkpoint, &r.Quarantined, &r.LeaseOwner, &r.LeaseLive,
			&r.LeaseExpiredForMs, &r.LeaseTTLMs); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// QueueCounts counts in one statement. The open quarantine entries are
// the partial index quarantine_open; an effect awaiting approval's
// updated_at is its request's time, read from the index effects_open.
func (Exec[D]) QueueCounts(ctx context.Context, q driver.ReadQuerier) (driver.QueueCounts, error) {
	var c driver.QueueCounts
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM quarantine WHERE resolved_at IS NULL),
		(SELECT count(*) FROM deferred),
		(SELECT count(*) FROM version_conflicts WHERE resolved_at IS NULL),
		(SELECT COALESCE(MIN(updated_at), 0) FROM effects WHERE state = 'AWAITING_APPROVAL')`).Scan(&c.Quarantined, &c.Deferred, &c.Conflicts, &c.OldestAwaitingApproval)
	return c, err
}

// EffectCounts groups the effects by kind and state.
func (Exec[D]) EffectCounts(ctx context.Context, q driver.ReadQuerier) ([]driver.EffectCount, error) {
	rows, err := q.QueryContext(ctx, `SELECT kind, state, count(*) FROM effects GROUP BY kind, state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.EffectCount
	for rows.Next() {
		var c driver.EffectCount
		if err := rows.Scan(&c.Kind, &c.State, &c.N); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
