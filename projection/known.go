package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/eventlite/eventlite/store"
)

// ErrUnknownProjection: WaitFor was asked about a projection that no
// runner of this process was built for and that the store has no record
// of (see WaitFor).
var ErrUnknownProjection = errors.New("unknown projection")

// built holds, per open store, the names of the projections a Runner was
// built for in this process: WaitFor knows them before their runner's
// first transaction. A closed store's entry is dropped at the next
// record.
var built = struct {
	sync.Mutex
	m map[*store.Store]map[string]bool
}{m: map[*store.Store]map[string]bool{}}

func recordBuilt(s *store.Store, name string) {
	built.Lock()
	defer built.Unlock()
	for st := range built.m {
		select {
		case <-st.Done():
			delete(built.m, st)
		default:
		}
	}
	names := built.m[s]
	if names == nil {
		names = map[string]bool{}
		built.m[s] = names
	}
	names[name] = true
}

func builtNames(s *store.Store) []string {
	built.Lock()
	defer built.Unlock()
	var out []string
	for n := range built.m[s] {
		out = append(out, n)
	}
	return out
}

// checkKnown returns an error wrapping ErrUnknownProjection naming the known
// projections when name is neither built in this process on s nor
// recorded in the store.
func checkKnown(ctx context.Context, s *store.Store, name string) error {
	here := builtNames(s)
	if name == CatalogName || slices.Contains(here, name) { // the catalog is the store's own
		return nil
	}
	recs, err := Records(s).List(ctx)
	if err != nil {
		return err
	}
	known := here
	for _, r := range recs {
		if r.Name == name {
			return nil
		}
		known = append(known, r.Name)
	}
	slices.Sort(known)
	known = slices.Compact(known)
	list := "none"
	if len(known) > 0 {
		list = strings.Join(known, ", ")
	}
	return fmt.Errorf("wait for projection %q: %w: no runner was built for it in this process (projection.NewRunner) and the store has no record of it (known: %s); check the name", name, ErrUnknownProjection, list)
}
