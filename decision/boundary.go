package decision

import (
	"context"
	"errors"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// appendIf appends events to stream in tx, with cond when it is set.
func appendIf(ctx context.Context, tx *store.Tx, tenant, stream string, cond *store.Condition, events []envelope.Event) (store.AppendResult, error) {
	expected := store.Any
	if cond != nil {
		expected = expected.If(*cond)
	}
	return tx.Append(ctx, tenant, stream, expected, events...)
}

// retryable reports whether err says the boundary moved: an event
// matching the query was appended after the position read.
func retryable(err error) bool {
	return errors.Is(err, store.ErrConditionFailed)
}
