package store

import (
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// handlerSQLDoc is the page on SQL that runs on both engines, which the
// error of a caller's failed statement points to.
const handlerSQLDoc = "docs/handler-sql.md"

// statementError returns err, a caller's statement's failure (a
// handler's, an Update closure's, a View's), with a hint when the engine
// refused the statement's text (a syntax error, an ambiguous or unknown
// column: driver.Statement): the engine, the statement's first line and
// the docs page. Such failures usually come from SQL written for the
// other engine. errors.As still reaches the engine's own error.
func statementError(d driver.Dialect, query string, err error) error {
	if err == nil || classify(err) != driver.Statement {
		return mapErr(err)
	}
	return fmt.Errorf("statement failed on %s: %s: see %s (placeholders, upserts, types on both engines): %w", engineName(d), firstLine(query), handlerSQLDoc, err)
}

func engineName(d driver.Dialect) string {
	if d == driver.Postgres {
		return "PostgreSQL"
	}
	return "SQLite"
}

// firstLine returns query's first line that is not blank, trimmed, cut at
// 120 bytes (on a UTF-8 boundary).
func firstLine(query string) string {
	line := ""
	for l := range strings.SplitSeq(query, "\n") {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	const limit = 120
	if len(line) > limit {
		cut := limit
		for cut > 0 && line[cut]&0xC0 == 0x80 {
			cut--
		}
		line = line[:cut] + "..."
	}
	return line
}

// rebind returns a caller's query as the engine takes it: on PostgreSQL
// its ? placeholders become $1..$n, outside string constants, quoted
// identifiers, comments and dollar quotes; a query that holds a $n
// already is sent as written (so jsonb's ?, ?| and ?& work there), and
// in one without, ?? is a literal ?. SQLite takes the query as given.
func (tx *Tx) rebind(query string) string {
	if tx == nil {
		return query
	}
	return tx.s.ex.Rebind(query)
}
