package store

import "github.com/eventlite/eventlite/store/internal/sqlitedriver"

// The append path's and the reads' SQL, now the driver's, for the query
// plan test.
var (
	insertEventsSQL    = sqlitedriver.InsertEventsSQL
	streamsPageSQL     = sqlitedriver.StreamsPageSQL
	streamStateSQL     = sqlitedriver.StreamStateSQL
	createStreamSQL    = sqlitedriver.CreateStreamSQL
	reviveStreamSQL    = sqlitedriver.ReviveStreamSQL
	streamVersionSQL   = sqlitedriver.StreamVersionSQL
	selectEvents       = sqlitedriver.SelectEvents
	selectStreamEvents = sqlitedriver.SelectStreamEvents
)

const eventCols = sqlitedriver.EventCols
