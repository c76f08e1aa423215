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

// Outbox is outboxSQL.
func (dialect) Outbox() *sqlshared.OutboxSQL { return outboxSQL }

// outboxSQL is the outbox's shared statements in SQLite's spelling.
var outboxSQL = sqlshared.NewOutboxSQL(dialect{})

// The shared outbox statements in SQLite's spelling, under the names the
// store's query plan tests use.
var (
	PendingCTE          = outboxSQL.PendingCTE
	AdvanceSettledQuery = outboxSQL.AdvanceSettled
	AdvanceScannedQuery = outboxSQL.AdvanceScanned
)

// ScavengeBatch is the connection's temp.scavenge_batch.
func (dialect) ScavengeBatch() string { return "temp.scavenge_batch" }

// OutboxRowOf is a plain left join.
func (dialect) OutboxRowOf() string { return "LEFT JOIN outbox o ON o.position = e.position" }

// counterSQL is sqlshared.CounterSQL, bound once.
var counterSQL = dialect{}.Bind(sqlshared.CounterSQL)

// HasExtensions holds when attrs is not NULL (the extensions are its
// last part).
func (dialect) HasExtensions() string { return "attrs IS NOT NULL" }

// ErasureKey reads the extensions' part of attrs.
func (dialect) ErasureKey() string { return `json_extract(` + ExtensionsSQL + `, '$.erasurekey')` }

// CopyColumn quotes the column, or reads one of the four that the
// events' attrs column joins from it (CopyColumns names them).
func (dialect) CopyColumn(table, col string) string {
	if x, ok := eventAttrColumns[col]; ok && table == "events" {
		return x
	}
	return QuoteIdent(col)
}

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
