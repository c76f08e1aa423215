package sqlshared

import (
	"context"
	"strconv"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// RenameTable runs ALTER TABLE ... RENAME TO.
func (x Exec[D]) RenameTable(ctx context.Context, q driver.Querier, from, to string) error {
	d := x.dialect()
	_, err := q.ExecContext(ctx, `ALTER TABLE `+d.QuoteIdent(from)+` RENAME TO `+d.QuoteIdent(to))
	return err
}

// newScope spells a nested scope's savepoint statements, as both engines
// take them.
func newScope(depth int) driver.ScopeSQL {
	name := "eventlite_nested_" + strconv.Itoa(depth)
	return driver.ScopeSQL{Open: `SAVEPOINT ` + name, Rollback: `ROLLBACK TO SAVEPOINT ` + name, Release: `RELEASE SAVEPOINT ` + name}
}

// scopes holds the statements of the usual depths, built once.
var scopes = func() (s [8]driver.ScopeSQL) {
	for i := range s {
		s[i] = newScope(i + 1)
	}
	return s
}()

// Scope returns the savepoint statements of depth, built once for the
// usual depths.
func (Exec[D]) Scope(depth int) driver.ScopeSQL {
	if depth <= len(scopes) {
		return scopes[depth-1]
	}
	return newScope(depth)
}
