package store

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
)

// StreamInfo describes one stream.
type StreamInfo struct {
	Tenant  string
	Stream  string
	Version int64 // its newest event's version (lifecycle events included)
	// Events counts the events a read of the stream returns: its
	// versions from where reads start (after a truncate, the truncate's
	// before) to Version, less the versions a restore took back (no event
	// has them; the eventlite.stream.restored event above them is read,
	// so it counts). It is Version unless the stream was truncated,
	// deleted and written again, or taken back by a restore.
	Events int64
	// FirstPosition and LastPosition are the global positions of the
	// stream's first retained (after a truncate) and newest events.
	FirstPosition int64
	LastPosition  int64
	CreatedAt     time.Time
	UpdatedAt     time.Time // when its newest event was appended
}

// StreamsOptions selects the streams Streams lists. The zero value lists
// them all.
type StreamsOptions struct {
	// Prefix, when set, lists only stream ids that start with it. The
	// stream whose id is Prefix itself, when it exists, comes first.
	Prefix string
	// After, when set, lists only stream ids after it (exclusive): pass
	// the last id of a page to read the next one.
	After string
	// Limit caps the number of streams; 0 means no limit.
	Limit int
}

// Streams lists a tenant's streams in stream id order (byte order), page
// by page as the caller iterates. Deleted streams are not listed. At most one StreamsOptions is read.
func (s *Store) Streams(ctx context.Context, tenant string, opts ...StreamsOptions) iter.Seq2[StreamInfo, error] {
	var o StreamsOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	return func(yield func(StreamInfo, error) bool) {
		if err := envelope.ValidateTenant(tenant); err != nil {
			yield(StreamInfo{}, err)
			return
		}
		if o.Limit < 0 {
			yield(StreamInfo{}, &envelope.InvalidError{Index: -1, Field: "limit", Reason: "negative: pass 0 for no limit"})
			return
		}
		after, remaining := o.After, o.Limit
		// The first page starts at the prefix itself (inclusive), the
		// others after the last id seen.
		from, inclusive := after, false
		if o.Prefix > after {
			from, inclusive = o.Prefix, true
		}
		for {
			n := pageSize
			if o.Limit > 0 && remaining < n {
				n = remaining
			}
			if n == 0 {
				return
			}
			page, err := s.streamsPage(ctx, tenant, from, inclusive, n)
			if err != nil {
				yield(StreamInfo{}, fmt.Errorf("list streams: %w", err))
				return
			}
			for _, si := range page {
				if !strings.HasPrefix(si.Stream, o.Prefix) {
					return // ids are in byte order: no later one has the prefix
				}
				if !yield(si, nil) {
					return
				}
			}
			if len(page) < n {
				return
			}
			remaining -= len(page)
			from, inclusive = page[len(page)-1].Stream, false
		}
	}
}

func (s *Store) streamsPage(ctx context.Context, tenant, from string, inclusive bool, n int) ([]StreamInfo, error) {
	rows, err := s.ex.StreamsPage(ctx, s.rdb, tenant, from, inclusive, n)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []StreamInfo
	for _, r := range rows {
		out = append(out, StreamInfo{Tenant: tenant, Stream: r.Stream, Version: r.Version, Events: r.Version - r.FirstVersion + 1 - r.GapVersions,
			FirstPosition: r.FirstPosition, LastPosition: r.LastPosition,
			CreatedAt: time.Unix(0, r.CreatedAt).UTC(), UpdatedAt: time.Unix(0, r.UpdatedAt).UTC()})
	}
	return out, nil
}
