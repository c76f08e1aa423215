package store_test

import "github.com/eventlite/eventlite/store/internal/testfix"

// The file probes and fixtures store/backup's tests share
// (store/internal/testfix).
var (
	fillStore      = testfix.FillStore
	readLog        = testfix.ReadLog
	rawQueryString = testfix.RawQueryString
	rawFileBytes   = testfix.RawFileBytes
	holds          = testfix.Holds
	tagMatches     = testfix.TagMatches
	openAddr       = testfix.OpenChecked
)

type logEvent = testfix.LogEvent
