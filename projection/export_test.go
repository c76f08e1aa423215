package projection

import (
	"context"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// The external tests reach the table operations that only a runner and
// a rebuild use.

func (p *Projection) CreateTables(ctx context.Context, s *store.Store, tx *store.Tx, names map[string]string) error {
	return p.createTables(ctx, s, tx, names)
}

func (p *Projection) ApplyTx(ctx context.Context, tx *store.Tx, names map[string]string, e envelope.Event) error {
	return p.applyTx(ctx, tx, names, e)
}

func (p *Projection) ApplyBatchTx(ctx context.Context, tx *store.Tx, names map[string]string, events []envelope.Event) error {
	return p.applyBatchTx(ctx, tx, names, events)
}
