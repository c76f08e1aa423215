package publish_test

import (
	"context"
	"fmt"
	"github.com/hashicorp/go-hclog"
	"os"
	"path/filepath"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// Drain a store's outbox to standard output as JSON Lines, then look at
// the outbox's stats.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "eventlite-example")
	defer os.RemoveAll(dir)
	// Logs go to stderr, quiet unless something needs attention.
	log := hclog.New(&hclog.LoggerOptions{Name: "shop", Level: hclog.Warn})
	s, err := store.Open(ctx, filepath.Join(dir, "eventlite.db"), &store.Options{Logger: log})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	e, _ := envelope.New("order.placed", map[string]int{"total": 42})
	e.ID, e.Source, e.Time = "01J9ZZZZZZZZZZZZZZZZZZZZZZ", "/shop", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.Append(ctx, "default", "order-1", store.NoStream, e); err != nil {
		fmt.Println(err)
		return
	}

	r, err := publish.New(publish.Options{Store: s, Publisher: publish.NewStdout(os.Stdout), Once: true, Logger: log})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.Run(ctx); err != nil {
		fmt.Println(err)
		return
	}
	st, _ := outbox.For(s).Stats(ctx)
	fmt.Printf("pending %d, published %d\n", st.Pending, st.Published)
	// Output:
	// {"specversion":"1.0","id":"01J9ZZZZZZZZZZZZZZZZZZZZZZ","source":"/shop","type":"order.placed","subject":"order-1","time":"2025-01-02T03:04:05Z","datacontenttype":"application/json","tenant":"default","streamversion":1,"position":"1","data":{"total":42}}
	// pending 0, published 1
}
