package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// AnyLiveKey asks erasure_keys for a key not forgotten.
func (Exec) AnyLiveKey(ctx context.Context, q driver.ReadQuerier) (bool, error) {
	var ok bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM erasure_keys WHERE forgotten_at IS NULL)`).Scan(&ok)
	return ok, err
}

// DataKey reads an erasure_keys row.
func (Exec) DataKey(ctx context.Context, q driver.ReadQuerier, tenant, subject string) (driver.DataKeyRow, bool, error) {
	var k driver.DataKeyRow
	var forgotten sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT master_key_id, wrapped_key, forgotten_at FROM erasure_keys WHERE tenant = ? AND subject = ?`,
		tenant, subject).Scan(&k.MasterKeyID, &k.Wrapped, &forgotten)
	if errors.Is(err, sql.ErrNoRows) {
		return k, false, nil
	}
	k.Forgotten = forgotten.Valid
	return k, err == nil, err
}

// InsertDataKey inserts with ON CONFLICT DO NOTHING.
func (Exec) InsertDataKey(ctx context.Context, q driver.Querier, tenant, subject string, masterKeyID, wrapped []byte, at int64) error {
	_, err := q.ExecContext(ctx, `INSERT INTO erasure_keys (tenant, subject, master_key_id, wrapped_key, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, tenant, subject, masterKeyID, wrapped, at)
	return err
}

// ForgetDataKey reads the row, then clears it (or inserts a tombstone):
// the write transaction holds SQLite's only writer between the two.
func (Exec) ForgetDataKey(ctx context.Context, q driver.Querier, tenant, subject string, at int64) (found, already bool, err error) {
	var forgotten sql.NullInt64
	err = q.QueryRowContext(ctx, `SELECT forgotten_at FROM erasure_keys WHERE tenant = ? AND subject = ?`, tenant, subject).Scan(&forgotten)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// A subject of outside events: keep a tombstone.
		_, err = q.ExecContext(ctx, `INSERT INTO erasure_keys (tenant, subject, created_at, forgotten_at) VALUES (?, ?, ?, ?)`,
			tenant, subject, at, at)
		return false, false, err
	case err != nil:
		return false, false, err
	case forgotten.Valid:
		return true, true, nil
	}
	_, err = q.ExecContext(ctx, `UPDATE erasure_keys SET master_key_id = NULL, wrapped_key = NULL, forgotten_at = ?
			WHERE tenant = ? AND subject = ?`, at, tenant, subject)
	return true, false, err
}

// NewestForget reads MAX(forgotten_at) through the erasure_keys_forgotten
// index.
func (Exec) NewestForget(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var newest int64
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(forgotten_at), 0) FROM erasure_keys`).Scan(&newest)
	return newest, err
}

// SubjectStreams reads the record of the subject's streams
// (erasure_streams) and, in case a row is missing from it, scans the
// tenant's events that have extensions: forgetting is rare.
func (Exec) SubjectStreams(ctx context.Context, q driver.ReadQuerier, tenant, subject string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT stream_id FROM erasure_streams WHERE tenant = ?1 AND subject = ?2
		UNION SELECT stream_id FROM events
		WHERE tenant = ?1 AND attrs IS NOT NULL AND json_extract(`+ExtensionsSQL+`, '$.erasurekey') = ?2
		ORDER BY 1`, tenant, subject)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var st string
		if err := rows.Scan(&st); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// DropSubjectSnapshots deletes the stream's snapshots.
func (Exec) DropSubjectSnapshots(ctx context.Context, q driver.Querier, tenant, stream string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM snapshots WHERE tenant = ? AND stream_id = ?`, tenant, stream)
	return err
}

// eraseCopyQuery sets a structured-JSON event copy (column %[2]s of
// table %[1]s) of subject ?2's events of tenant ?1 to the copy without
// its data and its tags (the eventlitetags extension), marked
// dataerased: true.
const eraseCopyQuery = `UPDATE %[1]s
	SET %[2]s = CAST(json_set(json_remove(CAST(%[2]s AS TEXT), '$.data', '$.data_base64', '$.` + envelope.ExtTags + `'), '$.dataerased', json('true')) AS BLOB)
	WHERE tenant = ?1 AND %[2]s IS NOT NULL AND json_valid(CAST(%[2]s AS TEXT))
	AND json_extract(CAST(%[2]s AS TEXT), '$.erasurekey') = ?2`

// copyColumns is the column that holds the copy, per kind (the kind is
// the table).
var copyColumns = map[driver.CopyKind]string{
	driver.CopiesQuarantine:       "event",
	driver.CopiesDeferred:         "event",
	driver.CopiesVersionConflicts: "conflicting_event",
}

// EraseCopies rewrites the copies' JSON without their data and tags.
func (Exec) EraseCopies(ctx context.Context, q driver.Querier, kind driver.CopyKind, tenant, subject string) (int64, error) {
	col, ok := copyColumns[kind]
	if !ok {
		return 0, fmt.Errorf("no copies of events kept as %q", kind)
	}
	if kind == driver.CopiesQuarantine {
		// Before the copy loses its data: the match reads the copy.
		if _, err := q.ExecContext(ctx, `UPDATE quarantine SET error = ?3
			WHERE tenant = ?1 AND error <> '' AND error <> ?3 AND event IS NOT NULL AND json_valid(CAST(event AS TEXT))
			AND json_extract(CAST(event AS TEXT), '$.erasurekey') = ?2`, tenant, subject, driver.ErasedError); err != nil {
			return 0, err
		}
	}
	res, err := q.ExecContext(ctx, fmt.Sprintf(eraseCopyQuery, kind, col), tenant, subject)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// EraseOutboxErrors finds the subject's events by their erasurekey.
func (Exec) EraseOutboxErrors(ctx context.Context, q driver.Querier, tenant, subject string) (int64, error) {
	res, err := q.ExecContext(ctx, `UPDATE outbox SET last_error = ?3
		WHERE last_error IS NOT NULL AND last_error <> '' AND last_error <> ?3 AND position IN (SELECT position FROM events
			WHERE tenant = ?1 AND attrs IS NOT NULL AND json_extract(`+ExtensionsSQL+`, '$.erasurekey') = ?2)`, tenant, subject, driver.ErasedError)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// ScrubErased sets data to NULL where the event's key is forgotten.
func (Exec) ScrubErased(ctx context.Context, q driver.Querier) (int64, error) {
	r, err := q.ExecContext(ctx, `UPDATE events SET data = NULL
				WHERE data IS NOT NULL AND attrs IS NOT NULL AND json_extract(`+ExtensionsSQL+`, '$.erasurekey') IS NOT NULL
				AND EXISTS (SELECT 1 FROM erasure_keys k WHERE k.tenant = events.tenant
					AND k.subject = json_extract(`+ExtensionsSQL+`, '$.erasurekey') AND k.forgotten_at IS NOT NULL)`)
	if err != nil {
		return 0, err
	}
	n, _ := r.RowsAffected()
	return n, nil
}

// MasterKeys groups the keys not forgotten by master key.
func (Exec) MasterKeys(ctx context.Context, q driver.ReadQuerier) ([]driver.MasterKeyUse, error) {
	return driver.ReadMasterKeys(ctx, q)
}

// AnyMasterKey reads the first key not forgotten.
func (Exec) AnyMasterKey(ctx context.Context, q driver.ReadQuerier) ([]byte, bool, error) {
	return driver.ReadAnyMasterKey(ctx, q)
}

// ForgottenSubjects lists the forgotten subjects.
func (Exec) ForgottenSubjects(ctx context.Context, q driver.ReadQuerier) ([]driver.ForgottenKey, error) {
	return driver.ReadForgottenSubjects(ctx, q)
}
