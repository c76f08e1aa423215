package sqlitedriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The operation ledger (migration 0002's operations table).

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
