package projection

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// Rebuilding is for eventlite's rebuilder (package replay): p's
// operations on its declared tables, each under the name a rebuild maps
// it to. Its key's package is internal to eventlite, so an application
// cannot call it.
func Rebuilding(_ inside.Key, p *Projection) rebuilding { return rebuilding{p} }

// rebuilding is what a rebuild does with a projection's tables.
type rebuilding struct{ p *Projection }

// CreateTables creates the declared tables under the names that names
// maps them to (a table already there is left alone).
func (r rebuilding) CreateTables(ctx context.Context, s *store.Store, tx *store.Tx, names map[string]string) error {
	return r.p.createTables(ctx, s, tx, names)
}

// ApplyBatch applies events (in position order) in one nested scope, with
// the projection's ApplyBatch when it has one, else as ApplyEvents does.
// On error every write of the batch is undone.
func (r rebuilding) ApplyBatch(ctx context.Context, tx *store.Tx, names map[string]string, events []envelope.Event) error {
	return r.p.applyBatchTx(ctx, tx, names, events)
}

// ApplyEvents applies events one by one with Apply in one nested scope.
// An error is an *EventError naming the event; every write of the batch
// is then undone.
func (r rebuilding) ApplyEvents(ctx context.Context, tx *store.Tx, names map[string]string, events []envelope.Event) error {
	return r.p.applyEventsTx(ctx, tx, names, events)
}

// ConsumerParts is for eventlite's consumer loops (package natsjs): the
// store c writes to and c's logger. Its key's package is internal to
// eventlite, so an application cannot call it.
func ConsumerParts(_ inside.Key, c *Consumer) (*store.Store, hclog.Logger) { return c.s, c.log }
