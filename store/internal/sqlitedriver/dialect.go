package sqlitedriver

import "github.com/eventlite/eventlite/store/internal/driver/sqlshared"

// dialect is SQLite's answer to what the shared statements ask of an
// engine (sqlshared.Dialect).
type dialect struct{}

var _ sqlshared.Dialect = dialect{}

// Bind returns query unchanged: SQLite takes ? placeholders itself.
func (dialect) Bind(query string) string { return query }

// QuoteIdent is the package's QuoteIdent.
func (dialect) QuoteIdent(name string) string { return QuoteIdent(name) }

// ForUpdate is empty: the one writer's lock holds what it read.
func (dialect) ForUpdate() string { return "" }

// Greatest is SQLite's scalar max.
func (dialect) Greatest() string { return "max" }

// Least is SQLite's scalar min.
func (dialect) Least() string { return "min" }

// NotDistinct is IS: NULL IS NULL holds.
func (dialect) NotDistinct() string { return "IS" }

// HasPrefix compares the column's first length(?) characters.
func (dialect) HasPrefix(col string) string { return "substr(" + col + ", 1, length(?)) = ?" }

// UserEvent compares the type's first ten characters.
func (dialect) UserEvent() string { return `substr(type, 1, 10) != 'eventlite.'` }

// Int64 is expr: SQLite's integers are 64-bit.
func (dialect) Int64(expr string) string { return expr }

// ForUpdateOf is empty, as ForUpdate.
func (dialect) ForUpdateOf(string) string { return "" }

// NowMillis is nowMillis.
func (dialect) NowMillis() string { return nowMillis }

// PendingCTE is the package's PendingCTE.
func (dialect) PendingCTE() string { return PendingCTE }

// ScavengeBatch is the connection's temp.scavenge_batch.
func (dialect) ScavengeBatch() string { return "temp.scavenge_batch" }

// OutboxRowOf is a plain left join.
func (dialect) OutboxRowOf() string { return "LEFT JOIN outbox o ON o.position = e.position" }

// counterSQL is sqlshared.CounterSQL, bound once.
var counterSQL = dialect{}.Bind(sqlshared.CounterSQL)
