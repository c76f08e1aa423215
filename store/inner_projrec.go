package store

import (
	"context"

	"github.com/eventlite/eventlite/internal/projrow"
)

// What package projection needs of a Store for its records: the
// projections' status and checkpoints, the quarantine and the operator's
// actions on it, holes in the position sequence, and the rebuilds in
// progress. The store keeps the rows (its doctor and counts read them);
// projection is their public face (projection.Records,
// projection.Rebuilds), with the types an application reads.

// ProjectionRecords reads the record of the projection name, or of every
// projection when name is "".
func (in inner) ProjectionRecords(ctx context.Context, name string) ([]projrow.Record, error) {
	return in.s.projections(ctx, name)
}

// Checkpoint returns the position the named projection has applied up
// to, 0 when it has none, from the read pool.
func (in inner) Checkpoint(ctx context.Context, name string) (int64, error) {
	return in.s.checkpoint(ctx, name)
}

// Checkpoints lists every checkpoint by name.
func (in inner) Checkpoints(ctx context.Context) (map[string]int64, error) {
	return in.s.checkpoints(ctx)
}

// QuarantinedEvents lists the quarantine entries of consumer ("" for
// every one), only the unresolved ones when open, oldest first.
func (in inner) QuarantinedEvents(ctx context.Context, consumer string, open bool) ([]projrow.Quarantined, error) {
	return in.s.quarantinedEvents(ctx, consumer, open)
}

// OpenQuarantine lists the open entries of name ("" for every one); a
// name without a record is a *projrow.NotFound.
func (in inner) OpenQuarantine(ctx context.Context, name string) ([]projrow.Quarantined, error) {
	return in.s.openQuarantine(ctx, name)
}

// RetryQuarantined marks the open entries of name for eventID for a
// retry and returns them; none is a *projrow.NotFound.
func (in inner) RetryQuarantined(ctx context.Context, name, eventID string) ([]projrow.Quarantined, error) {
	return in.s.retryQuarantined(ctx, name, eventID)
}

// SkipQuarantined resolves the open entries of name for eventID as
// skipped (moving a projection stopped on it past it) and returns them;
// none is a *projrow.NotFound.
func (in inner) SkipQuarantined(ctx context.Context, name, eventID string) ([]projrow.Quarantined, error) {
	return in.s.skipQuarantined(ctx, name, eventID)
}

// QuarantineRetries lists the open entries of name marked for retry.
func (in inner) QuarantineRetries(ctx context.Context, name string) ([]projrow.Quarantined, error) {
	return in.s.quarantineRetries(ctx, name)
}

// HolesBetween finds the holes among positions after and up to upto.
func (in inner) HolesBetween(ctx context.Context, after, upto int64) ([]projrow.Hole, error) {
	return in.s.holesBetween(ctx, after, upto)
}

// RecordedHoles lists the holes readers recorded.
func (in inner) RecordedHoles(ctx context.Context) ([]projrow.Hole, error) {
	return in.s.recordedHoles(ctx)
}

// LoadRebuild returns the projection's rebuild in progress from the read
// pool; ok is false when there is none.
func (in inner) LoadRebuild(ctx context.Context, projection string) (projrow.Rebuild, bool, error) {
	return in.s.loadRebuild(ctx, in.s.rdb, projection)
}

// ListRebuilds lists the rebuilds in progress, by projection name.
func (in inner) ListRebuilds(ctx context.Context) ([]projrow.Rebuild, error) {
	return in.s.listRebuilds(ctx)
}

// CountEvents counts the events with after < position <= upto, only
// those of types when it is not empty.
func (in inner) CountEvents(ctx context.Context, after, upto int64, types []string) (int64, error) {
	return in.s.countEvents(ctx, after, upto, types)
}
