package envelope_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
)

// New builds an event from a Go value, Prepare fills the defaults and
// validates it, and MarshalJSON writes it as one line of CloudEvents JSON.
// The id and time are fixed here; left empty, Prepare fills a ULID and now.
func ExampleNew() {
	type OrderPlaced struct {
		OrderID string `json:"order_id"`
		Total   int    `json:"total"`
	}
	e, err := envelope.New("com.example.order.placed", OrderPlaced{OrderID: "o-1", Total: 42})
	if err != nil {
		fmt.Println(err)
		return
	}
	e.ID = "01HY0000000000000000000000"
	e.Source = "/orders"
	e.Stream = "order-o-1"
	e.Time = time.Date(2024, 5, 17, 11, 30, 0, 0, time.FixedZone("CEST", 2*3600))
	if err := e.Prepare(time.Now(), 0); err != nil {
		fmt.Println(err)
		return
	}
	b, err := e.MarshalJSON()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(b))
	// Output:
	// {"specversion":"1.0","id":"01HY0000000000000000000000","source":"/orders","type":"com.example.order.placed","subject":"order-o-1","time":"2024-05-17T09:30:00Z","datacontenttype":"application/json","data":{"order_id":"o-1","total":42}}
}

// DecodeSequence reads JSON Lines, pretty-printed events and batches alike.
func ExampleDecodeSequence() {
	in := `{"specversion":"1.0","id":"a","source":"/s","type":"t"}
[{"specversion":"1.0","id":"b","source":"/s","type":"t"},
 {"specversion":"1.0","id":"c","source":"/s","type":"t","tenant":"a b"}]`
	evs, err := envelope.DecodeSequence(strings.NewReader(in), 0)
	fmt.Println(len(evs), err)
	// Output:
	// 0 invalid event 2: tenant: "a b" is not 1-64 characters of A-Z a-z 0-9 . _ -
}
