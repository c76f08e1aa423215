package store

import (
	"context"
	"slices"
	"strconv"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// tagIndexReport compares the tag index (event_tags) with the tags the
// events store: unindexed lists events whose stored tags lack their
// rows, stray the rows of no event's stored tags (no such event, another
// tenant, a tag the event does not carry), and invalid the events whose
// stored eventlitetags extension does not decode as tags (stored as a
// free extension by an eventlite before tags; no query matches them).
type tagIndexReport struct {
	unindexed, invalid []int64
	stray              int64
}

// checkTagIndex reads every event's stored tags and every index row.
func checkTagIndex(ctx context.Context, ex driver.Executor, q driver.ReadQuerier) (tagIndexReport, error) {
	type stored struct {
		tenant string
		tags   []string
		seen   int
	}
	var r tagIndexReport
	events := map[int64]*stored{}
	err := ex.EachEventTags(ctx, q, func(tenant string, pos int64, v string) error {
		tags, err := envelope.DecodeTags(v)
		if err != nil {
			r.invalid = append(r.invalid, pos)
			return nil
		}
		events[pos] = &stored{tenant: tenant, tags: tags}
		return nil
	})
	if err != nil {
		return r, mapErr(err)
	}
	if ok, err := ex.TableExists(ctx, q, "event_tags"); err != nil || !ok {
		return r, mapErr(err)
	}
	err = driver.EachTagRow(ctx, q, func(tenant string, pos int64, tag string) error {
		e := events[pos]
		if e == nil || e.tenant != tenant || !slices.Contains(e.tags, tag) {
			r.stray++
			return nil
		}
		e.seen++
		return nil
	})
	if err != nil {
		return r, mapErr(err)
	}
	for pos, e := range events {
		if e.seen != len(e.tags) {
			r.unindexed = append(r.unindexed, pos)
		}
	}
	slices.Sort(r.unindexed)
	return r, nil
}

// tagProblems words a report's broken invariants.
func (r tagIndexReport) problems() []string {
	var out []string
	if n := len(r.unindexed); n > 0 {
		out = append(out, strconv.Itoa(n)+" events whose tags the tag index lacks")
	}
	if r.stray > 0 {
		out = append(out, strconv.FormatInt(r.stray, 10)+" tag index rows of no event's tags")
	}
	return out
}
