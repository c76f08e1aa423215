package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The operation ledger (migration 0002's operations table).

const selectOperation = `SELECT operation_type, input_hash, result, created_at FROM operations WHERE tenant = ? AND operation_id = ?`

// Operation reads one row by its key.
func (Exec) Operation(ctx context.Context, q driver.ReadQuerier, tenant, id string) (driver.OperationRow, bool, error) {
	op := driver.OperationRow{Tenant: tenant, ID: id}
	err := q.QueryRowContext(ctx, selectOperation, tenant, id).Scan(&op.Type, &op.InputHash, &op.Result, &op.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.OperationRow{}, false, nil
	}
	if err != nil {
		return driver.OperationRow{}, false, err
	}
	return op, true, nil
}

// RecordOperation reads first, then inserts: most calls of a retried
// command find the row, and SQLite's writer holds the write lock from the
// read to the commit.
func (x Exec) RecordOperation(ctx context.Context, q driver.Querier, op driver.OperationRow) (driver.OperationRow, bool, error) {
	stored, ok, err := x.Operation(ctx, q, op.Tenant, op.ID)
	if err != nil || ok {
		return stored, ok, err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO operations (tenant, operation_id, operation_type, input_hash, result, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, op.Tenant, op.ID, op.Type, op.InputHash, op.Result, op.CreatedAt)
	if err != nil {
		return driver.OperationRow{}, false, err
	}
	return op, false, nil
}
