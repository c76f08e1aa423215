package driver

import "context"

// Operations is the operation ledger: one row per idempotent command
// carried out, keyed by tenant and operation id, with what it returned.
type Operations interface {
	// Operation reads a ledger row; false when there is none.
	Operation(ctx context.Context, q ReadQuerier, tenant, id string) (OperationRow, bool, error)
	// RecordOperation returns the stored row of op's tenant and id
	// (found true, nothing written), or inserts op (found false). Read
	// and insert are one: a driver whose writers do not serialize inserts
	// first and reads the winner on a conflict, so that two commands with
	// one id never both record.
	RecordOperation(ctx context.Context, q Querier, op OperationRow) (stored OperationRow, found bool, err error)
}

// OperationRow is one row of the operation ledger; CreatedAt is unix
// nanoseconds.
type OperationRow struct {
	Tenant    string
	ID        string
	Type      string
	InputHash string
	Result    []byte
	CreatedAt int64
}
