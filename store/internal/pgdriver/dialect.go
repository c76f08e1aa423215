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

// Outbox is outboxSQL.
func (dialect) Outbox() *sqlshared.OutboxSQL { return outboxSQL }

// outboxSQL is the outbox's shared statements in PostgreSQL's spelling.
var outboxSQL = sqlshared.NewOutboxSQL(dialect{})

// ScavengeBatch is the session's pg_temp.scavenge_batch.
func (dialect) ScavengeBatch() string { return "pg_temp.scavenge_batch" }

// OutboxRowOf is the package's outboxRowOf (a lateral lookup by key).
func (dialect) OutboxRowOf() string { return outboxRowOf }

// counterSQL is sqlshared.CounterSQL, bound once.
var counterSQL = dialect{}.Bind(sqlshared.CounterSQL)

// HasExtensions holds when the extensions column is not NULL.
func (dialect) HasExtensions() string { return "extensions IS NOT NULL" }

// ErasureKey reads the extensions' JSON. Extensions are JSON written by
// the store, whose string values hold no control character, so the cast
// never fails on a NUL.
func (dialect) ErasureKey() string { return `(extensions::json ->> 'erasurekey')` }

// CopyColumn quotes the column: PostgreSQL keeps every column as it is.
func (dialect) CopyColumn(_, col string) string { return QuoteIdent(col) }

// SelectEvents is the package's SelectEvents.
func (dialect) SelectEvents() string { return SelectEvents }

// SelectStreamEvents is the package's SelectStreamEvents.
func (dialect) SelectStreamEvents() string { return SelectStreamEvents }

// EventScanner is NewEventScanner.
func (dialect) EventScanner() sqlshared.EventScanner { return NewEventScanner() }

// StreamEventScanner is NewStreamEventScanner.
func (dialect) StreamEventScanner(tenant, stream string) sqlshared.EventScanner {
	return NewStreamEventScanner(tenant, stream)
}
