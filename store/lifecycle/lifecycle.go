package lifecycle

import (
	"context"
	"errors"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// Lifecycle deletes, truncates and scavenges a store's streams, and keeps
// its retention policies; For returns it. Each delete or truncate appends
// a lifecycle event as the stream's next version, in one transaction with
// what it changes, and returns that append's result: the version and the
// ETag move. The stream's events and the lifecycle events stay in the log
// (ReadAll, projections and the relay see them) until a scavenge removes
// what every reader has passed.
type Lifecycle struct{ s *store.Store }

// For returns the lifecycle handle of s.
func For(s *store.Store) *Lifecycle { return &Lifecycle{s: s} }

// The lifecycle events' types.
const (
	// TypeStreamDeleted is the tombstone a delete appends; its data is
	// StreamDeleted.
	TypeStreamDeleted = envelope.ReservedTypePrefix + "stream.deleted"
	// TypeStreamTruncated is the event a truncate appends; its data is
	// StreamTruncated.
	TypeStreamTruncated = envelope.ReservedTypePrefix + "stream.truncated"
)

// StreamDeleted is the data of an eventlite.stream.deleted event.
type StreamDeleted struct {
	Reason string `json:"reason"`
	By     string `json:"by"`   // who deleted: the OS user or the token's tenant, never a secret
	Hard   bool   `json:"hard"` // never writable again
}

// StreamTruncated is the data of an eventlite.stream.truncated event.
type StreamTruncated struct {
	Before int64 `json:"before"` // reads start at this version
}

// DeleteOptions say how to delete a stream.
type DeleteOptions struct {
	// Hard marks the stream as never writable (nor readable) again.
	Hard bool
	// Reason and By go into the tombstone; By names who deleted (the OS
	// user, or the token's tenant), never a secret.
	Reason, By string
	// Expected is the condition on the stream's version; the zero value
	// is Any, which still needs the stream to exist.
	Expected store.Expected
}

// Delete deletes a tenant's stream: it appends an eventlite.stream.deleted

// Delete deletes a tenant's stream: it appends an eventlite.stream.deleted
// tombstone as its next version and drops its snapshots. The stream then
// reads as not found (store.ErrNotFound) and counts as absent: an append
// with NoStream or Any continues after the tombstone's version, one with
// StreamExists or a version conflicts with actual 0. With Hard the
// stream is never written or read again (store.ErrStreamDeleted).
//
// A stream that does not exist, or is already soft-deleted, is
// store.ErrNotFound; a hard-deleted one store.ErrStreamDeleted; a failed
// expectation a *store.ConflictError. Any error writes nothing.
func (l *Lifecycle) Delete(ctx context.Context, tenant, stream string, opts DeleteOptions) (store.AppendResult, error) {
	return store.Inner(inside.Key{}, l.s).DeleteStream(ctx, nil, tenant, stream, opts.Hard, opts.Reason, opts.By, opts.Expected)
}

// DeleteTx is Delete inside an Update closure, so that the caller's own
// writes (an operation ledger row) commit with it. A refused delete (not
// found, hard-deleted, a failed expectation) writes nothing and leaves
// the transaction usable.
func (l *Lifecycle) DeleteTx(ctx context.Context, tx *store.Tx, tenant, stream string, opts DeleteOptions) (store.AppendResult, error) {
	if tx == nil {
		return store.AppendResult{}, errNoTx
	}
	return store.Inner(inside.Key{}, l.s).DeleteStream(ctx, tx, tenant, stream, opts.Hard, opts.Reason, opts.By, opts.Expected)
}

// errNoTx is DeleteTx's and TruncateTx's error without a transaction.
var errNoTx = errors.New("lifecycle: DeleteTx and TruncateTx take the Tx of an Update closure")

// Truncate truncates a tenant's stream before version before (2 <= before
// <= the stream's version, and not before the version its reads start at
// already): it appends eventlite.stream.truncated {"before":before} as its
// next version, and reads then start at before.
// expected is the condition on the stream's version (Any still needs the
// stream to exist). Another before is an *envelope.InvalidError
// (field "before"); a stream that does not exist or is soft-deleted is
// store.ErrNotFound, a hard-deleted one store.ErrStreamDeleted. Any error
// writes nothing.
func (l *Lifecycle) Truncate(ctx context.Context, tenant, stream string, before int64, expected store.Expected) (store.AppendResult, error) {
	return store.Inner(inside.Key{}, l.s).TruncateStream(ctx, nil, tenant, stream, before, expected)
}

// TruncateTx is Truncate inside an Update closure. A refused truncate
// writes nothing and leaves the transaction usable.
func (l *Lifecycle) TruncateTx(ctx context.Context, tx *store.Tx, tenant, stream string, before int64, expected store.Expected) (store.AppendResult, error) {
	if tx == nil {
		return store.AppendResult{}, errNoTx
	}
	return store.Inner(inside.Key{}, l.s).TruncateStream(ctx, tx, tenant, stream, before, expected)
}
