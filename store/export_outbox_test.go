package store

import "github.com/eventlite/eventlite/store/internal/sqlitedriver"

// The relay's queries, now the SQLite driver's, for TestOutboxQueryPlans.
const (
	readOutboxQuery     = sqlitedriver.ReadOutboxQuery
	advanceSettledQuery = sqlitedriver.AdvanceSettledQuery
	advanceScannedQuery = sqlitedriver.AdvanceScannedQuery
	markPublishedQuery  = sqlitedriver.MarkPublishedQuery
	selectDeadLetters   = sqlitedriver.SelectDeadLetters
	pendingCTE          = sqlitedriver.PendingCTE
)
