package scenario_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
)

// A small account aggregate for the kit's own tests.
type (
	Opened struct {
		Owner string `json:"owner"`
	}
	Deposited struct {
		Amount int64  `json:"amount"`
		Memo   string `json:"memo,omitempty"`
	}
	Withdrawn struct {
		Amount int64 `json:"amount"`
	}

	Open     struct{ Owner string }
	Deposit  struct{ Amount int64 }
	Withdraw struct{ Amount int64 }
)

type account struct {
	open    bool
	balance int64
}

var errFunds = errors.New("insufficient funds")

// registry registers the events; account.deposited is at schema version
// 2: version 1 carried the amount in cents as "cents", which an upcaster
// brings forward.
func registry() *envelope.Registry {
	var r envelope.Registry
	envelope.Register[Opened](&r, "account.opened")
	envelope.Register[Deposited](&r, "account.deposited", envelope.Schema("https://bank.example/schemas/account.deposited/v2"))
	envelope.RegisterUpcaster(&r, "account.deposited", 1, func(e envelope.Event) (envelope.Event, error) {
		var v1 struct {
			Cents int64 `json:"cents"`
		}
		if err := json.Unmarshal(e.Data, &v1); err != nil {
			return e, err
		}
		e.Data, _ = json.Marshal(Deposited{Amount: v1.Cents / 100})
		e.DataSchema = "https://bank.example/schemas/account.deposited/v2"
		return e, nil
	})
	envelope.Register[Withdrawn](&r, "account.withdrawn")
	return &r
}

func accountDef() aggregate.Definition[account] {
	return aggregate.Definition[account]{
		Name:     "account",
		Registry: registry(),
		Evolve: func(a account, ev aggregate.Event) account {
			switch p := ev.Payload.(type) {
			case Opened:
				a.open = true
			case Deposited:
				a.balance += p.Amount
			case Withdrawn:
				a.balance -= p.Amount
			}
			return a
		},
		Decide: func(a account, cmd aggregate.Command) ([]any, error) {
			switch c := cmd.Payload.(type) {
			case Open:
				if a.open {
					return nil, nil
				}
				return []any{Opened(c)}, nil
			case Deposit:
				return []any{Deposited{Amount: c.Amount}}, nil
			case Withdraw:
				if c.Amount > a.balance {
					return nil, fmt.Errorf("%w: balance %d, asked %d", errFunds, a.balance, c.Amount)
				}
				return []any{Withdrawn(c)}, nil
			}
			return nil, fmt.Errorf("unknown command %T", cmd.Payload)
		},
	}
}
