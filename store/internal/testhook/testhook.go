// Package testhook holds the points where the store's tests (its own and
// the shared driver suite's) stop an operation half-way, to make a race
// with another store deterministic. Nothing is set outside tests.
//
// Its points sit above the drivers, so the same races are made on both
// engines.
package testhook

import "sync/atomic"

// Func is a hook: it receives the tenant and stream of the operation.
type Func func(tenant, stream string)

// appendSealed: see SetAppendSealed.
var appendSealed atomic.Pointer[Func]

// SetAppendSealed sets the function an append made outside a transaction
// calls after it sealed its events' data with the keys it looked up (its
// key cache's included) and before it reaches the writer, and returns a
// function that removes it.
func SetAppendSealed(f Func) (remove func()) {
	appendSealed.Store(&f)
	return func() { appendSealed.Store(nil) }
}

// AppendSealed runs the hook SetAppendSealed set, if any.
func AppendSealed(tenant, stream string) {
	if f := appendSealed.Load(); f != nil {
		(*f)(tenant, stream)
	}
}
