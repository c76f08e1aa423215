package sqlshared

import (
	"context"
	"database/sql"
	"errors"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// The operation ledger: the operations table, keyed by tenant and
// operation id. Recording one is each engine's own (SQLite reads first
// under its write lock; PostgreSQL inserts first).

// Operation reads one row by its key.
func (x Exec[D]) Operation(ctx context.Context, q driver.ReadQuerier, tenant, id string) (driver.OperationRow, bool, error) {
	op := driver.OperationRow{Tenant: tenant, ID: id}
	err := q.QueryRowContext(ctx, x.bind(`SELECT operation_type, input_hash, result, created_at FROM operations WHERE tenant = ? AND operation_id = ?`),
		tenant, id).Scan(&op.Type, &op.InputHash, &op.Result, &op.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.OperationRow{}, false, nil
	}
	if err != nil {
		return driver.OperationRow{}, false, err
	}
	return op, true, nil
}
