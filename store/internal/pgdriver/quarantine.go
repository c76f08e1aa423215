package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Quarantine upserts on the partial unique index of open entries
// (quarantine_open): the conflict target names its columns and its
// predicate, and the identity column numbers a new entry.
func (Exec) Quarantine(ctx context.Context, q driver.Querier, e driver.QuarantineRow, now int64) error {
	_, err := q.ExecContext(ctx, `INSERT INTO quarantine (consumer, reason, tenant, subject, version, position, event_id, event, error, attempts, evidence, created_at, last_failed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
		ON CONFLICT (consumer, tenant, event_id, position) WHERE resolved_at IS NULL
		DO UPDATE SET reason = EXCLUDED.reason, error = EXCLUDED.error, attempts = quarantine.attempts + EXCLUDED.attempts, evidence = EXCLUDED.evidence,
			last_failed_at = EXCLUDED.last_failed_at, retry_requested_at = NULL`,
		e.Consumer, e.Reason, e.Tenant, e.Subject, e.Version, e.Position, e.EventID, e.Event, e.Error, e.Attempts, e.Evidence, now)
	return err
}

// ResolveQuarantine updates the open entries that match.
func (Exec) ResolveQuarantine(ctx context.Context, q driver.Querier, consumer string, position int64, eventID string, now int64) error {
	_, err := q.ExecContext(ctx, `UPDATE quarantine SET resolved_at = $1, resolution = 'applied', retry_requested_at = NULL WHERE consumer = $2 AND resolved_at IS NULL
		AND (($3::bigint > 0 AND position = $3) OR ($3 = 0 AND event_id = $4))`, now, consumer, position, eventID)
	return err
}

const quarantineColumns = `SELECT id, consumer, reason, tenant, subject, version, position, event_id, event, error, attempts, evidence,
	created_at, COALESCE(resolved_at, 0), COALESCE(last_failed_at, created_at), COALESCE(retry_requested_at, 0), resolution,
	EXISTS (SELECT 1 FROM projections p WHERE p.name = quarantine.consumer)
	FROM quarantine`

func scanQuarantine(rows *sql.Rows, err error) ([]driver.QuarantineRow, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.QuarantineRow
	for rows.Next() {
		var e driver.QuarantineRow
		if err := rows.Scan(&e.ID, &e.Consumer, &e.Reason, &e.Tenant, &e.Subject, &e.Version, &e.Position, &e.EventID, &e.Event,
			&e.Error, &e.Attempts, &e.Evidence, &e.CreatedAt, &e.ResolvedAt, &e.LastFailedAt, &e.RetryRequestedAt, &e.Resolution, &e.Projection); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// QuarantineEntries reads the entries of one consumer or all.
func (Exec) QuarantineEntries(ctx context.Context, q driver.ReadQuerier, consumer string, open bool) ([]driver.QuarantineRow, error) {
	query := quarantineColumns + ` WHERE ($1 = '' OR consumer = $1)`
	if open {
		query += ` AND resolved_at IS NULL`
	}
	return scanQuarantine(q.QueryContext(ctx, query+` ORDER BY id`, consumer))
}

// OpenQuarantineEntries reads and locks the open entries for one event,
// so that the marks the write transaction then makes decide on rows no
// other transaction changes before it commits.
func (Exec) OpenQuarantineEntries(ctx context.Context, q driver.ReadQuerier, consumer, eventID string) ([]driver.QuarantineRow, error) {
	return scanQuarantine(q.QueryContext(ctx, quarantineColumns+` WHERE consumer = $1 AND event_id = $2 AND resolved_at IS NULL ORDER BY id
		FOR UPDATE OF quarantine`, consumer, eventID))
}

// QuarantineRetries reads the open entries marked for retry.
func (Exec) QuarantineRetries(ctx context.Context, q driver.ReadQuerier, consumer string) ([]driver.QuarantineRow, error) {
	return scanQuarantine(q.QueryContext(ctx, quarantineColumns+` WHERE consumer = $1 AND resolved_at IS NULL AND retry_requested_at IS NOT NULL
		ORDER BY position, id`, consumer))
}

// QuarantineNameKnown asks the four tables in one statement.
func (Exec) QuarantineNameKnown(ctx context.Context, q driver.ReadQuerier, name string) (bool, error) {
	var ok bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM projections WHERE name = $1)
		OR EXISTS (SELECT 1 FROM quarantine WHERE consumer = $1)
		OR EXISTS (SELECT 1 FROM consumer_stats WHERE consumer = $1)
		OR EXISTS (SELECT 1 FROM checkpoints WHERE name = $1)`, name).Scan(&ok)
	return ok, err
}

// MarkQuarantineRetry updates the open entries for the event.
func (Exec) MarkQuarantineRetry(ctx context.Context, q driver.Querier, consumer, eventID string, now int64) error {
	_, err := q.ExecContext(ctx, `UPDATE quarantine SET retry_requested_at = $1 WHERE consumer = $2 AND event_id = $3 AND resolved_at IS NULL`,
		now, consumer, eventID)
	return err
}

// SkipQuarantine resolves the open entries for the event as skipped.
func (Exec) SkipQuarantine(ctx context.Context, q driver.Querier, consumer, eventID string, now int64) error {
	_, err := q.ExecContext(ctx, `UPDATE quarantine SET resolved_at = $1, resolution = 'skipped', retry_requested_at = NULL
			WHERE consumer = $2 AND event_id = $3 AND resolved_at IS NULL`, now, consumer, eventID)
	return err
}

// QuarantinedProjectionStatus reads and locks the projection's row, so
// that the status the write transaction then sets is decided on a status
// no other transaction changes before it commits.
func (Exec) QuarantinedProjectionStatus(ctx context.Context, q driver.ReadQuerier, name string) (string, error) {
	var status string
	err := q.QueryRowContext(ctx, `SELECT status FROM projections WHERE name = $1 FOR UPDATE`, name).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return status, err
}

// ResolveRetry is one conditional update.
func (Exec) ResolveRetry(ctx context.Context, q driver.Querier, id int64, resolution string, now int64) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE quarantine SET resolved_at = $1, resolution = $2, retry_requested_at = NULL
		WHERE id = $3 AND resolved_at IS NULL AND retry_requested_at IS NOT NULL`, now, resolution, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RetryFailed is one conditional update.
func (Exec) RetryFailed(ctx context.Context, q driver.Querier, id int64, cause string, now int64) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE quarantine SET attempts = attempts + 1, error = $1, last_failed_at = $2, retry_requested_at = NULL
		WHERE id = $3 AND resolved_at IS NULL AND retry_requested_at IS NOT NULL`, cause, now, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
