// Package benchdata makes the event data the benchmarks append and
// decode: realistic JSON orders of 200-300 bytes, the same in every
// package that measures them.
//
// It knows no engine: benchmarks of both append the same data.
package benchdata

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// Item is a line of an Order.
type Item struct {
	SKU        string `json:"sku"`
	Name       string `json:"name"`
	Qty        int    `json:"qty"`
	PriceCents int64  `json:"priceCents"`
}

// Order is the data of every benchmark event.
type Order struct {
	OrderID    string `json:"orderId"`
	CustomerID string `json:"customerId"`
	Customer   string `json:"customer"`
	Items      []Item `json:"items"`
	Currency   string `json:"currency"`
	TotalCents int64  `json:"totalCents"`
	Note       string `json:"note,omitempty"`
}

var (
	customers = []string{"Ada Lovelace", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov", "Ken Thompson"}
	products  = []string{"Espresso beans 1kg", "Ceramic mug", "Burr grinder", "Paper filters x100", "Milk jug"}
	notes     = []string{"", "leave at the door", "gift wrap please", "call before delivery, side entrance"}
)

// Payload returns an Order as compact JSON of 200-300 bytes, drawn from
// rng. Its string values contain spaces, as real data does.
func Payload(rng *rand.Rand, orderID string) []byte {
	o := Order{
		OrderID:    orderID,
		CustomerID: fmt.Sprintf("cus_%08d", rng.IntN(1e8)),
		Customer:   customers[rng.IntN(len(customers))],
		Currency:   "EUR",
		Note:       notes[rng.IntN(len(notes))],
	}
	for range 1 + rng.IntN(2) {
		it := Item{
			SKU:        fmt.Sprintf("SKU-%05d", rng.IntN(1e5)),
			Name:       products[rng.IntN(len(products))],
			Qty:        1 + rng.IntN(3),
			PriceCents: int64(200 + rng.IntN(5000)),
		}
		o.Items = append(o.Items, it)
		o.TotalCents += int64(it.Qty) * it.PriceCents
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}
