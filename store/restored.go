package store

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// What a restore (package store/backup) leaves in the log, which the
// store's readers, its checks and its consumers know.

// HoleRestore is the DetectedBy of the hole a restore leaves: the
// positions that the replaced database had handed out above the backup's
// head. CheckInvariants and Diagnose know them as no damage.
const HoleRestore = "restore"

// TypeStreamRestored is the type of the event a restore appends to each
// stream whose versions it took back, above every version the stream
// had; its data is StreamRestored. A consumer of the store's events
// skips the versions From..To instead of waiting for them
// (projection.Consumer does).
const TypeStreamRestored = driver.StreamRestoredType

// StreamRestored is the data of an eventlite.stream.restored event: the
// versions From..To were handed out before a restore removed them, and
// no event will ever have them again.
type StreamRestored struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// restoreGaps returns the holes restores recorded.
func (s *Store) restoreGaps(ctx context.Context) ([]hole, error) {
	holes, err := s.ex.HolesDetectedBy(ctx, s.rdb, HoleRestore)
	if err != nil {
		return nil, mapErr(err)
	}
	var out []hole
	for _, h := range holes {
		out = append(out, hole{From: h.From, To: h.To})
	}
	return out, nil
}

// coveredBy reports whether h lies inside one of gaps.
func coveredBy(h hole, gaps []hole) bool {
	for _, g := range gaps {
		if h.From >= g.From && h.To <= g.To {
			return true
		}
	}
	return false
}
