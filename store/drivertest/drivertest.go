// Package drivertest is the storage seam's shared driver suite: every
// guarantee of the design, proven through the public API (store,
// projection, replay), run once per driver. A driver passes when
// Run passes on a store it opens; a second driver is a second runner of
// the same suite, not a copy of its tests.
//
// Both engines' drivers run it: SQLite always, PostgreSQL with
// EVENTLITE_TEST_POSTGRES.
//
//	func TestDriverSuite(t *testing.T) {
//		drivertest.Run(t, drivertest.Harness{
//			Name: "sqlite",
//			Open: func(tb testing.TB, opts *store.Options) *store.Store { ... },
//		})
//	}
//
// The suite assumes no file: a store comes from the harness, on a fresh
// empty database, and a second store on the same database (another
// process, or the same one after a restart) from Harness.Reopen. Tests
// that need a file, the engine's own SQL or the store's internals stay
// beside the driver they test.
//
// The suite's fixtures (events, fills, read models, clocks) are exported
// so that those tests build their stores' content the same way instead
// of keeping copies; like the suite, they reach a store only through its
// public API.
package drivertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/store"
)

// Harness is what the suite needs from a driver.
type Harness struct {
	// Name names the driver in the subtests (TestDriverSuite/<Name>/...).
	Name string
	// Open returns an open store on a fresh, empty database that no other
	// test sees, with opts (nil meaning the driver's test defaults). The
	// harness closes it when tb ends and checks the store's invariants
	// (store.CheckInvariants) unless the test closed it itself.
	Open func(tb testing.TB, opts *store.Options) *store.Store
	// Reopen returns a second store on s's database, as another process
	// would open it; s may still be open (two processes) or closed by
	// the test (a restart). The harness closes it when tb ends. Nil: the
	// guarantees that need a second store are skipped.
	Reopen func(tb testing.TB, s *store.Store, opts *store.Options) *store.Store
}

// guarantee is one of the design's guarantees and the tests that prove
// it. A test's name is the name it had before the suite existed, so a
// failure still points at the same proof.
type guarantee struct {
	name  string
	tests []test
}

type test struct {
	name string
	run  func(t *testing.T, h Harness)
}

// Run runs every guarantee against h's driver, one subtest each.
func Run(t *testing.T, h Harness) {
	if h.Name == "" || h.Open == nil {
		t.Fatal("drivertest: a harness needs a Name and Open")
	}
	var skipped []string
	t.Run(h.Name, func(t *testing.T) {
		for _, g := range guarantees {
			t.Run(g.name, func(t *testing.T) {
				for _, tc := range g.tests {
					t.Run(tc.name, func(t *testing.T) {
						defer func() {
							if t.Skipped() {
								skipped = append(skipped, g.name+"/"+tc.name)
							}
						}()
						tc.run(t, h)
					})
				}
			})
		}
	})
	if err := checkParity(h.Name, skipped); err != nil {
		t.Error(err)
	}
}

// fileOnly lists the suite's tests that a driver without files may
// skip, with the reason. It is empty: what needs a file stays beside
// the SQLite driver's tests, outside the suite.
var fileOnly = map[string]string{}

// checkParity holds every driver to the same suite: a test of it that
// ran and skipped fails the run, unless fileOnly lists it, so no engine
// passes with fewer of the guarantees proven than another. A test that
// -run filtered out never ran and counts for nothing.
func checkParity(driver string, skipped []string) error {
	var bad []string
	for _, name := range skipped {
		if _, ok := fileOnly[name]; !ok {
			bad = append(bad, name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("driver %s skipped %d of the suite's tests that every driver must pass (%s): "+
		"give the harness what they need (Reopen), or list a test that truly needs a file in fileOnly with its reason",
		driver, len(bad), strings.Join(bad, ", "))
}

// reopen is h.Reopen, skipping the test when the driver has none.
func (h Harness) reopen(t *testing.T, s *store.Store, opts *store.Options) *store.Store {
	t.Helper()
	if h.Reopen == nil {
		t.Skipf("driver %s opens no second store on a database", h.Name)
	}
	return h.Reopen(t, s, opts)
}
