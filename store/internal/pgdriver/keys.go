package pgdriver

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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
	err := q.QueryRowContext(ctx, `SELECT master_key_id, wrapped_key, forgotten_at FROM erasure_keys WHERE tenant = $1 AND subject = $2`,
		tenant, subject).Scan(&k.MasterKeyID, &k.Wrapped, &forgotten)
	if errors.Is(err, sql.ErrNoRows) {
		return k, false, nil
	}
	k.Forgotten = forgotten.Valid
	return k, err == nil, err
}

// InsertDataKey inserts with ON CONFLICT DO NOTHING: a concurrent insert
// of the same key waits for the first one's transaction and then keeps
// its row.
func (Exec) InsertDataKey(ctx context.Context, q driver.Querier, tenant, subject string, masterKeyID, wrapped []byte, at int64) error {
	_, err := q.ExecContext(ctx, `INSERT INTO erasure_keys (tenant, subject, master_key_id, wrapped_key, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, tenant, subject, masterKeyID, wrapped, at)
	return err
}

// ForgetDataKey clears the row in one UPDATE ... WHERE forgotten_at IS
// NULL, whose row lock makes the check and the destruction one step;
// when it changed nothing, a read tells a forgotten key from none.
func (Exec) ForgetDataKey(ctx context.Context, q driver.Querier, tenant, subject string, at int64) (found, already bool, err error) {
	res, err := q.ExecContext(ctx, `UPDATE erasure_keys SET master_key_id = NULL, wrapped_key = NULL, forgotten_at = $3
		WHERE tenant = $1 AND subject = $2 AND forgotten_at IS NULL`, tenant, subject, at)
	if err != nil {
		return false, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, false, err
	}
	// No live key: keep a tombstone unless a row (forgotten) is there.
	res, err = q.ExecContext(ctx, `INSERT INTO erasure_keys (tenant, subject, created_at, forgotten_at) VALUES ($1, $2, $3, $3)
		ON CONFLICT DO NOTHING`, tenant, subject, at)
	if err != nil {
		return false, false, err
	}
	n, err := res.RowsAffected()
	return n == 0, n == 0, err
}

// NewestForget reads MAX(forgotten_at) through the erasure_keys_forgotten
// index.
func (Exec) NewestForget(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var newest int64
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(forgotten_at), 0) FROM erasure_keys WHERE forgotten_at IS NOT NULL`).Scan(&newest)
	return newest, err
}

// erasureKeyOf is the erasurekey extension of an events row (e), NULL
// for none. Extensions are JSON written by the store, whose string
// values hold no control character, so the cast never fails on a NUL.
const erasureKeyOf = `(e.extensions::json ->> 'erasurekey')`

// SubjectStreams reads the record of the subject's streams
// (erasure_streams) and, in case a row is missing from it, scans the
// tenant's events that have extensions: forgetting is rare.
func (Exec) SubjectStreams(ctx context.Context, q driver.ReadQuerier, tenant, subject string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT stream_id FROM erasure_streams WHERE tenant = $1 AND subject = $2
		UNION SELECT e.stream_id FROM events e
		WHERE e.tenant = $1 AND e.extensions IS NOT NULL AND `+erasureKeyOf+` = $2
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
	_, err := q.ExecContext(ctx, `DELETE FROM snapshots WHERE tenant = $1 AND stream_id = $2`, tenant, stream)
	return err
}

// copyColumns is the column that holds the copy, per kind (the kind is
// the table).
var copyColumns = map[driver.CopyKind]string{
	driver.CopiesQuarantine:       "event",
	driver.CopiesDeferred:         "event",
	driver.CopiesVersionConflicts: "conflicting_event",
}

// EraseCopies rewrites the copies in Go, not with PostgreSQL's JSON
// functions: a copy's data is the event's own JSON, which may hold an
// escaped NUL (\u0000) that json and jsonb refuse, and a copy that is not
// JSON is left alone (as SQLite's json_valid guard does) instead of
// failing the forget. It locks the tenant's copies it reads (FOR UPDATE),
// so that each is rewritten from its current bytes.
func (Exec) EraseCopies(ctx context.Context, q driver.Querier, kind driver.CopyKind, tenant, subject string) (int64, error) {
	col, ok := copyColumns[kind]
	if !ok {
		return 0, fmt.Errorf("no copies of events kept as %q", kind)
	}
	table := QuoteIdent(string(kind))
	rows, err := q.QueryContext(ctx, `SELECT ctid::text, `+col+` FROM `+table+`
		WHERE tenant = $1 AND `+col+` IS NOT NULL FOR UPDATE`, tenant)
	if err != nil {
		return 0, err
	}
	type change struct {
		ctid string
		copy []byte
	}
	var changes []change
	for rows.Next() {
		var c change
		var b []byte
		if err := rows.Scan(&c.ctid, &b); err != nil {
			rows.Close()
			return 0, err
		}
		if c.copy, ok = eraseCopy(b, subject); ok {
			changes = append(changes, c)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	set := ``
	if kind == driver.CopiesQuarantine {
		// The error text may have quoted the data.
		set = `, error = CASE WHEN error = '' THEN error ELSE $3 END`
	}
	for _, c := range changes {
		args := []any{c.copy, c.ctid}
		if set != "" {
			args = append(args, driver.ErasedError)
		}
		if _, err := q.ExecContext(ctx, `UPDATE `+table+` SET `+col+` = $1`+set+` WHERE ctid = $2::tid`, args...); err != nil {
			return 0, err
		}
	}
	return int64(len(changes)), nil
}

// EraseOutboxErrors finds the subject's events by their erasurekey.
func (Exec) EraseOutboxErrors(ctx context.Context, q driver.Querier, tenant, subject string) (int64, error) {
	res, err := q.ExecContext(ctx, `UPDATE outbox SET last_error = $3
		WHERE last_error IS NOT NULL AND last_error <> '' AND last_error <> $3 AND position IN (SELECT e.position FROM events e
			WHERE e.tenant = $1 AND e.extensions IS NOT NULL AND `+erasureKeyOf+` = $2)`, tenant, subject, driver.ErasedError)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// eraseCopy returns the structured-JSON event copy b without its data
// (data and data_base64 removed) and its tags (the eventlitetags
// extension), marked dataerased: true, when b is a
// JSON object whose erasurekey is subject. The other members keep their
// order and bytes; dataerased takes the place of an earlier one, or
// comes last.
func eraseCopy(b []byte, subject string) ([]byte, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out bytes.Buffer
	out.WriteByte('{')
	matched, erased := false, false
	member := func(key []byte, value []byte) {
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.Write(key)
		out.WriteByte(':')
		out.Write(value)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		key, err := marshalKey(name)
		if err != nil {
			return nil, false
		}
		switch name {
		case "data", "data_base64", envelope.ExtTags:
			continue
		case "dataerased":
			if !erased {
				member(key, []byte("true"))
				erased = true
			}
			continue
		case "erasurekey":
			var s string
			matched = json.Unmarshal(v, &s) == nil && s == subject
		}
		member(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF || !matched {
		return nil, false
	}
	if !erased {
		member([]byte(`"dataerased"`), []byte("true"))
	}
	out.WriteByte('}')
	return out.Bytes(), true
}

// marshalKey writes a member name as JSON without HTML escaping.
func marshalKey(name string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(name); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ScrubErased sets data to NULL where the event's key is forgotten.
func (Exec) ScrubErased(ctx context.Context, q driver.Querier) (int64, error) {
	r, err := q.ExecContext(ctx, `UPDATE events e SET data = NULL
		WHERE e.data IS NOT NULL AND e.extensions IS NOT NULL AND `+erasureKeyOf+` IS NOT NULL
		AND EXISTS (SELECT 1 FROM erasure_keys k WHERE k.tenant = e.tenant
			AND k.subject = `+erasureKeyOf+` AND k.forgotten_at IS NOT NULL)`)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
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
