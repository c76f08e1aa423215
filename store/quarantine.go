package store

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Quarantine records q inside an Update closure (package projection's
// Quarantined, as its row). An open entry for the same consumer, tenant,
// event id and position is updated (attempts and error) rather than
// repeated.
func (tx txBook) Quarantine(ctx context.Context, q projrow.Quarantined) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	if q.Evidence == "" {
		q.Evidence = "{}"
	}
	err := s.ex.Quarantine(ctx, s.wconn, driver.QuarantineRow{Consumer: q.Consumer, Reason: q.Reason, Tenant: q.Tenant, Subject: q.Subject,
		Version: q.Version, Position: q.Position, EventID: q.EventID, Event: q.Event, Error: q.Error, Attempts: q.Attempts, Evidence: q.Evidence}, tx.now)
	if err != nil {
		return fmt.Errorf("quarantine %s event %q: %w", q.Consumer, q.EventID, mapErr(err))
	}
	return nil
}

// ResolveQuarantine marks the open entries of consumer at position (or,
// with position 0, for the event id) resolved.
func (tx txBook) ResolveQuarantine(ctx context.Context, consumer string, position int64, eventID string) error {
	if err := tx.check(); err != nil {
		return err
	}
	s := tx.s
	return mapErr(s.ex.ResolveQuarantine(ctx, s.wconn, consumer, position, eventID, tx.now))
}

// quarantinedEvents lists quarantine entries of consumer ("" for every
// one), only the unresolved ones when open, oldest first.
func (s *Store) quarantinedEvents(ctx context.Context, consumer string, open bool) ([]projrow.Quarantined, error) {
	return quarantined(s.ex.QuarantineEntries(ctx, s.rdb, consumer, open))
}
