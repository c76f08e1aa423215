package store_test

import (
	"reflect"
	"testing"

	"github.com/eventlite/eventlite/store"
)

// maxStoreMethods is the most methods *Store may have: what `go doc
// ./store Store` lists fits on a screen. A new feature adds a handle (one
// accessor, its methods on the handle) or methods of *Tx, never Store
// methods.
const maxStoreMethods = 25

// TestStoreMethodSetStaysSmall: *Store keeps what a service calls and
// accessors for the handles; the rest lives on the handles and on *Tx.
func TestStoreMethodSetStaysSmall(t *testing.T) {
	st := reflect.TypeFor[*store.Store]()
	if n := st.NumMethod(); n > maxStoreMethods {
		names := make([]string, n)
		for i := range n {
			names[i] = st.Method(i).Name
		}
		t.Fatalf("*store.Store has %d methods, at most %d: add a handle rather than a Store method (%v)", n, maxStoreMethods, names)
	}
}
