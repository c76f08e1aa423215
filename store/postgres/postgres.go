// Package postgres links the PostgreSQL driver into a program: importing
// it lets store.Open (and every package built on it) open a postgres://
// or postgresql:// address.
//
//	import _ "github.com/eventlite/eventlite/store/postgres"
//
// A program that opens SQLite files only leaves it out and links no
// PostgreSQL code (no pgx). Without the import, store.Open refuses a
// PostgreSQL address with an error that names this import (its password
// redacted). The eventlite command imports it.
package postgres

import (
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/pgdriver"
)

func init() { driver.RegisterServer(pgdriver.Driver{}) }
