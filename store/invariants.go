package store

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// CheckInvariants scans the whole file and reports every broken invariant
// of the log in an *InvariantError: versions 1..n without gap per stream,
// a stream row for every stream with events and events for every stream
// row, the outbox's watermark (every event at or below it settled, none
// of the pending events between it and the relay's cursor outside a
// stream with a failed row, neither above the newest position) and every
// outbox row's event, positions increasing with versions inside a stream, no hole
// in the global positions (but for the positions a restore left unused:
// see backup.Restore), no removed position that the next append would hand out
// again (the position floor), every stored event's tags in the tag
// index and no index row beside them, and SQLite's own integrity check. It reads
// everything: use it in tests and reconciliation, not on a hot path.
func (s *Store) CheckInvariants(ctx context.Context) error {
	problems, err := invariantProblems(ctx, s.ex, s.rdb)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return &InvariantError{Problems: problems}
	}
	return nil
}

// invariantProblems runs CheckInvariants' checks through q and returns
// what is broken, one line per kind.
func invariantProblems(ctx context.Context, ex driver.Executor, q driver.ReadQuerier) ([]string, error) {
	counts, err := ex.CheckLog(ctx, q, typeStreamDeleted)
	if err != nil {
		return nil, fmt.Errorf("check invariants: %w", mapErr(err))
	}
	var problems []string
	for _, c := range counts {
		if c.Count > 0 {
			problems = append(problems, fmt.Sprintf("%d %s", c.Count, invariantProblem[c.Invariant]))
		}
	}
	integrity, err := ex.IntegrityCheck(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("check invariants: %w", mapErr(err))
	}
	for _, msg := range integrity {
		problems = append(problems, "integrity_check: "+msg)
	}
	tags, err := checkTagIndex(ctx, ex, q)
	if err != nil {
		return nil, fmt.Errorf("check invariants: tag index: %w", err)
	}
	problems = append(problems, tags.problems()...)
	return problems, nil
}

// invariantProblem says what the rows that break an invariant are.
var invariantProblem = map[driver.Invariant]string{
	driver.VersionsGapFree:           "streams whose versions are not 1..n",
	driver.StreamsHaveEvents:         "streams without events",
	driver.EventsHaveStream:          "events without a stream row",
	driver.EventsHaveOutboxRow:       "events without an outbox row",
	driver.OutboxRowsHaveEvent:       "outbox rows without an event",
	driver.PositionsFollowVersions:   "events whose position is not above their predecessor's in the stream",
	driver.PositionsGapFree:          "holes in the global positions",
	driver.TombstonesLast:            "deleted streams whose newest event is not their tombstone",
	driver.FirstVersionsInRange:      "streams whose reads start past their version plus one",
	driver.RemovedIDsGone:            "removed event ids still in the log",
	driver.RemovedPositionsGone:      "removed positions still in the log",
	driver.WatermarkOneRow:           "outbox watermark rows other than one",
	driver.SettledBelowWatermark:     "events at or below the outbox watermark that are not settled",
	driver.PendingBelowCursorBlocked: "pending events below the relay's cursor outside a stream with a failed row",
	driver.WatermarkNotAhead:         "outbox watermarks above the newest position",
	driver.FloorOneRow:               "position floor rows other than the one",
	driver.RemovedBelowSequence:      "removed positions the next append would hand out again",
}
