package pgdriver

import "github.com/eventlite/eventlite/store/internal/driver/sqlshared"

// dialect is PostgreSQL's answer to what the shared statements ask of an
// engine (sqlshared.Dialect).
type dialect struct{}

var _ sqlshared.Dialect = dialect{}

// Bind numbers the ? placeholders (Rebind, cached).
func (dialect) Bind(query string) string { return Exec{}.Rebind(query) }

// QuoteIdent is the package's QuoteIdent.
func (dialect) QuoteIdent(name string) string { return QuoteIdent(name) }

// ForUpdate locks the rows read until the transaction ends.
func (dialect) ForUpdate() string { return " FOR UPDATE" }

// Greatest is GREATEST.
func (dialect) Greatest() string { return "GREATEST" }

// Least is LEAST.
func (dialect) Least() string { return "LEAST" }

// NotDistinct is IS NOT DISTINCT FROM.
func (dialect) NotDistinct() string { return "IS NOT DISTINCT FROM" }

// HasPrefix compares the column's left length(?) characters.
func (dialect) HasPrefix(col string) string { return "left(" + col + ", length(?)) = ?" }

// UserEvent is starts_with's negation.
func (dialect) UserEvent() string { return `NOT starts_with(type, 'eventlite.')` }

// Int64 casts to bigint.
func (dialect) Int64(expr string) string { return expr + "::bigint" }

// ForUpdateOf locks the rows of one table of a join.
func (dialect) ForUpdateOf(table string) string { return " FOR UPDATE OF " + table }

// NowMillis is nowMillis.
func (dialect) NowMillis() string { return nowMillis }

// PendingCTE is the package's PendingCTE.
func (dialect) PendingCTE() string { return PendingCTE }

// ScavengeBatch is the session's pg_temp.scavenge_batch.
func (dialect) ScavengeBatch() string { return "pg_temp.scavenge_batch" }

// OutboxRowOf is the package's outboxRowOf (a lateral lookup by key).
func (dialect) OutboxRowOf() string { return outboxRowOf }

// counterSQL is sqlshared.CounterSQL, bound once.
var counterSQL = dialect{}.Bind(sqlshared.CounterSQL)
