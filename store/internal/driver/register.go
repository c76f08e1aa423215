package driver

import "sync"

// A program links the PostgreSQL driver only when it imports the public
// package store/postgres, whose init registers it here: package store
// itself imports no server driver, so a program that opens SQLite files
// only does not link pgx (database/sql's drivers work the same way).

var (
	serverMu sync.RWMutex
	server   Driver
)

// RegisterServer makes d the driver of postgres:// addresses. It panics
// when another driver was registered: two would be a build mistake.
func RegisterServer(d Driver) {
	serverMu.Lock()
	defer serverMu.Unlock()
	if server != nil && server != d {
		panic("store: a second PostgreSQL driver registered")
	}
	server = d
}

// Server returns the registered driver of postgres:// addresses, nil when
// the program did not import store/postgres.
func Server() Driver {
	serverMu.RLock()
	defer serverMu.RUnlock()
	return server
}
