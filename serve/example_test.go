package serve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
)

// A service mounts the API over its store; any HTTP client appends and
// reads.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "serve-example")
	defer os.RemoveAll(dir)
	s, err := store.Open(context.Background(), filepath.Join(dir, "events.db"), nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	h, err := serve.New(s, nil)
	if err != nil {
		panic(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/v1/tenants/default/streams/order-1/events", strings.NewReader(`{"total":42}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("ce-type", "order.placed") // an event candidate: the server fills id, time, source
	req.Header.Set("If-None-Match", "*")      // the stream must not exist yet
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, res.Header.Get("ETag"))
	fmt.Print(string(body))
	// Output:
	// 201 "1"
	// {"tenant":"default","stream":"order-1","version":1,"first_position":"1","last_position":"1"}
}
