package pgdriver

import (
	"context"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The operation ledger: the operations table, keyed by tenant and
// operation id.

// RecordOperation inserts first and reads the stored row when the key is
// taken. ON CONFLICT DO NOTHING waits for a concurrent insert of the key
// to end and then inserts nothing; the read that follows is a new
// statement and sees the winner's row. The head row already serializes
// the store's writers, so this only matters for a caller outside the
// writer, but it costs the common case (a new operation) nothing.
func (x Exec) RecordOperation(ctx context.Context, q driver.Querier, op driver.OperationRow) (driver.OperationRow, bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO operations (tenant, operation_id, operation_type, input_hash, result, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant, operation_id) DO NOTHING`,
		op.Tenant, op.ID, op.Type, op.InputHash, op.Result, op.CreatedAt)
	if err != nil {
		return driver.OperationRow{}, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return driver.OperationRow{}, false, err
	}
	if n == 1 {
		return op, false, nil
	}
	stored, ok, err := x.Operation(ctx, q, op.Tenant, op.ID)
	if err == nil && !ok {
		err = errors.New("operation ledger: the row that kept an insert out is gone")
	}
	return stored, ok, err
}
