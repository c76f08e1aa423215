// Package projapply hands package replay the operations a rebuild does
// on a projection's tables, which package projection keeps unexported:
// create the declared tables under shadow names and apply events to them.
package projapply

import (
	"context"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// Ops are one projection's operations on its declared tables, each
// under the name that names maps it to.
type Ops struct {
	// CreateTables creates the declared tables (a table already there is
	// left alone).
	CreateTables func(ctx context.Context, s *store.Store, tx *store.Tx, names map[string]string) error
	// ApplyBatch applies events (in position order) in one nested scope,
	// with the projection's ApplyBatch when it has one, else as
	// ApplyEvents does. On error every write of the batch is undone.
	ApplyBatch func(ctx context.Context, tx *store.Tx, names map[string]string, events []envelope.Event) error
	// ApplyEvents applies events one by one with Apply in one nested
	// scope. An error is a *projection.EventError naming the event;
	// every write of the batch is then undone.
	ApplyEvents func(ctx context.Context, tx *store.Tx, names map[string]string, events []envelope.Event) error
}

// For returns the operations of p, a *projection.Projection. Package
// projection sets it when it is initialised (it cannot be named here
// without an import cycle).
var For func(p any) Ops
