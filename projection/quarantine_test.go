package projection_test

import (
	"context"
	"errors"
	"testing"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestQuarantineNotFoundIsTyped: an unknown name, or a known name without
// an open entry for the event, reaches a caller of package projection as
// a *projection.QuarantineNotFoundError naming what was missing (the
// store's own answer does not leak), which matches store.ErrNotFound; an
// entry recorded through the bookkeeping reads back with its reason.
func TestQuarantineNotFoundIsTyped(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	q := projection.Quarantine(s)
	notFound := func(err error, name, eventID string) {
		t.Helper()
		var nf *projection.QuarantineNotFoundError
		if !errors.As(err, &nf) || nf.Name != name || nf.EventID != eventID || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("error %v (%T), want a *QuarantineNotFoundError for %q, %q matching ErrNotFound", err, err, name, eventID)
		}
	}
	_, err := q.Open(ctx, "nobody")
	notFound(err, "nobody", "")
	_, err = q.Retry(ctx, "nobody", "e1")
	notFound(err, "nobody", "")
	err = s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "mailer",
			Reason: string(projection.ReasonUninterpretable), EventID: "e1", Event: []byte(`{"type":"com.example.sent"}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.Skip(ctx, "mailer", "e2")
	notFound(err, "mailer", "e2")
	open, err := q.Open(ctx, "mailer")
	if err != nil || len(open) != 1 || open[0].Reason != projection.ReasonUninterpretable || open[0].Type != "com.example.sent" || open[0].Kind != "consumer" {
		t.Fatalf("open entries %+v (%v)", open, err)
	}
	skipped, err := q.Skip(ctx, "mailer", "e1")
	if err != nil || len(skipped) != 1 || skipped[0].Resolution != "skipped" {
		t.Fatalf("skipped %+v (%v)", skipped, err)
	}
	if all, err := q.Events(ctx, projection.QuarantineFilter{Consumer: "mailer"}); err != nil || len(all) != 1 || all[0].ResolvedAt.IsZero() {
		t.Fatalf("entries %+v (%v)", all, err)
	}
}
