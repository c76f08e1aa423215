package store

import (
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
	"github.com/eventlite/eventlite/store/internal/sqlitedriver"
)

// The SQLite driver's statements under the names the query plan tests
// (append_plan_test.go, outbox_plan_test.go) use.
var (
	insertEventsSQL     = sqlitedriver.InsertEventsSQL
	insertEventsArgs    = sqlitedriver.InsertEventsArgs
	streamsPageSQL      = sqlitedriver.StreamsPageSQL
	streamStateSQL      = sqlitedriver.StreamStateSQL
	createStreamSQL     = sqlitedriver.CreateStreamSQL
	reviveStreamSQL     = sqlitedriver.ReviveStreamSQL
	streamVersionSQL    = sqlitedriver.StreamVersionSQL
	selectEvents        = sqlitedriver.SelectEvents
	selectStreamEvents  = sqlitedriver.SelectStreamEvents
	eventByIDSQL        = sqlitedriver.EventByIDSQL
	idRemovedSQL        = sqlitedriver.IDRemovedSQL
	advanceSettledQuery = sqlitedriver.AdvanceSettledQuery
	advanceScannedQuery = sqlitedriver.AdvanceScannedQuery
	pendingCTE          = sqlitedriver.PendingCTE
)

const (
	sharedAll          = sqlitedriver.SharedAll
	readOutboxQuery    = sqlitedriver.ReadOutboxQuery
	markPublishedQuery = sqlitedriver.MarkPublishedQuery
	selectDeadLetters  = sqlshared.SelectDeadLetters
)
