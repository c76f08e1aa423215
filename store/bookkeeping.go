package store

import "github.com/eventlite/eventlite/internal/inside"

// txBook is the store's bookkeeping in a write transaction: checkpoints
// and fences, outbox marks, the consumer inbox, quarantine, rebuilds,
// table swaps, projection status, holes, the operation ledger. eventlite's
// own packages reach it through Bookkeeping; it is not part of Tx, so an
// application's handler or Update closure cannot break the guarantees it
// keeps (a checkpoint rewound without its fence, an outbox row marked
// published that was not).
type txBook struct{ *Tx }

// Bookkeeping is for eventlite's own packages (the projection runner, the
// relay, the rebuilder): its key's package is internal to eventlite, so an
// application cannot call it. What an application does in a transaction
// is on Tx.
func Bookkeeping(_ inside.Key, tx *Tx) txBook { return txBook{tx} }
