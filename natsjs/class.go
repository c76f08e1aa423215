package natsjs

import (
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
)

// classed wraps err in a *publish.Error of class c.
func classed(c publish.Class, err error) error {
	if err == nil {
		return nil
	}
	return &publish.Error{Class: c, Err: err}
}

// streamKey identifies a stream across tenants.
type streamKey struct{ tenant, stream string }

func keyOf(e *envelope.Event) streamKey { return streamKey{e.Tenant, e.Stream} }
