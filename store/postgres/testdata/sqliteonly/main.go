// Command sqliteonly is a program that opens a SQLite store and nothing
// else: it does not import store/postgres, so it must link no pgx
// (store/postgres's TestSQLiteOnlyProgramLinksNoPgx). It appends one
// event to a file in the directory given as its argument, then tries a
// PostgreSQL address and prints the error Open returns.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

func main() {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(os.Args[1], "events.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	e, err := envelope.New("order.placed", map[string]int{"total": 30})
	if err != nil {
		log.Fatal(err)
	}
	e.Source = "/shop"
	res, err := s.Append(ctx, "default", "order-1", store.NoStream, e)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("sqlite: position %d\n", res.LastPosition())

	_, err = store.Open(ctx, "postgres://alice:s3cret-pw@127.0.0.1:5432/db?sslmode=disable", nil)
	fmt.Printf("postgres: %v\n", err)
	fmt.Printf("is ErrNoPostgresDriver: %v\n", errors.Is(err, store.ErrNoPostgresDriver))
}
