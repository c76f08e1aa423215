package driver

import (
	"context"
	"database/sql"
	"errors"
)

// What both engines run word for word is written here once; each
// driver's method of the same name calls it.

// ReadMasterKeys is Keys.MasterKeys: the keys not forgotten, grouped by
// the master key that wraps them, the most used first.
func ReadMasterKeys(ctx context.Context, q ReadQuerier) ([]MasterKeyUse, error) {
	rows, err := q.QueryContext(ctx, `SELECT master_key_id, count(*) FROM erasure_keys WHERE master_key_id IS NOT NULL
		GROUP BY master_key_id ORDER BY count(*) DESC, master_key_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MasterKeyUse
	for rows.Next() {
		var u MasterKeyUse
		if err := rows.Scan(&u.ID, &u.Keys); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// ReadAnyMasterKey is Keys.AnyMasterKey: the master key of the first key
// not forgotten.
func ReadAnyMasterKey(ctx context.Context, q ReadQuerier) ([]byte, bool, error) {
	var id []byte
	err := q.QueryRowContext(ctx, `SELECT master_key_id FROM erasure_keys WHERE master_key_id IS NOT NULL LIMIT 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	return id, err == nil, err
}

// ReadForgottenSubjects is Keys.ForgottenSubjects.
func ReadForgottenSubjects(ctx context.Context, q ReadQuerier) ([]ForgottenKey, error) {
	rows, err := q.QueryContext(ctx, `SELECT tenant, subject, forgotten_at FROM erasure_keys
		WHERE forgotten_at IS NOT NULL ORDER BY tenant, subject`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ForgottenKey
	for rows.Next() {
		var k ForgottenKey
		if err := rows.Scan(&k.Tenant, &k.Subject, &k.At); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// ReadHoles runs query, the engine's spelling of a select of
// (from_position, to_position) from position_holes with args, and scans
// its rows.
func ReadHoles(ctx context.Context, q ReadQuerier, query string, args ...any) ([]FileHole, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FileHole
	for rows.Next() {
		var h FileHole
		if err := rows.Scan(&h.From, &h.To); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}
