// Package consumerhook hands natsjs's consumer loop what it needs of a
// projection.Consumer beyond the consumer's exported methods: the store's
// closing and the consumer's logger.
package consumerhook

import (
	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/store"
)

// Parts are what a consumer loop needs of one consumer.
type Parts struct {
	// Store is the store the consumer writes to.
	Store *store.Store
	// Log is the consumer's logger.
	Log hclog.Logger
}

// For returns the parts of c, a *projection.Consumer. Package projection
// sets it when it is initialised (it cannot be named here without an
// import cycle).
var For func(c any) Parts
