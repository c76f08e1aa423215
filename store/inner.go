package store

import "github.com/eventlite/eventlite/internal/inside"

// inner is what eventlite's packages under store/ (the effect ledger,
// erasure, backup and restore, the lifecycle jobs) need of a Store that
// an application must not call: its driver, its write and read
// transactions, its keys. Each such package's needs are methods on inner
// in a file of its own (inner_<package>.go); store keeps the event log,
// the packages keep their domains.
type inner struct{ s *Store }

// Inner is for eventlite's own packages: its key's package is internal
// to eventlite, so an application cannot call it.
func Inner(_ inside.Key, s *Store) inner { return inner{s} }
