package store

import (
	"database/sql/driver"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

// The tests of cancellation need to act while a statement runs: the SQL
// function eventlite_test_hook(x, key) calls the hook registered under
// key with x (a row of a long statement), and fails the statement when
// the hook returns an error. Without a hook it returns 0.
func init() {
	sqlite.MustRegisterScalarFunction("eventlite_test_hook", 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		x, _ := args[0].(int64)
		key, _ := args[1].(string)
		if fn, ok := testHooks.Load(key); ok {
			if err := fn.(func(int64) error)(x); err != nil {
				return nil, err
			}
		}
		return int64(0), nil
	})
}

var testHooks sync.Map // key -> func(x int64) error

// SetTestHook registers fn under key until the returned func is called.
func SetTestHook(key string, fn func(x int64) error) (remove func()) {
	testHooks.Store(key, fn)
	return func() { testHooks.Delete(key) }
}

// LongRead is a query that counts n rows, calling the hook under key on
// each: a statement that runs for a while, with a way in. Its one result
// is 0 (the hook returns 0 for every row that it lets through).
func LongRead(n int64, key string) (query string, args []any) {
	return fmt.Sprintf(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d)
		SELECT count(*) FROM c WHERE eventlite_test_hook(x, ?) != 0`, n), []any{key}
}

// LongWrite is a statement that inserts n rows into table (one TEXT
// column k), key/1 to key/n, calling the hook under key on each.
func LongWrite(table string, n int64, key string) (query string, args []any) {
	return fmt.Sprintf(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d)
		INSERT INTO %s (k) SELECT ?1 || '/' || x FROM c WHERE eventlite_test_hook(x, ?1) = 0`, n, table), []any{key}
}
