package effect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
)

// Do runs an effect that needs a person's approval: the first run records
// it and runs nothing; the person approves the exact arguments by their
// hash (eventlite effects approve KEY --args-hash HASH); the next run calls
// the outside system once, with the stored canonical arguments.
func ExampleLedger_Do() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "effect-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ledger := effect.For(s)

	run := effect.Intent{Tenant: "default", Key: "refund:o-1", Kind: effect.External,
		Resource: "order/o-1", Summary: "refund 12.50 to the customer", RequestedBy: "support-bot",
		Args: map[string]any{"order": "o-1", "cents": 1250}, NeedsApproval: true}
	refund := func(ctx context.Context, args json.RawMessage) (string, error) {
		fmt.Println("refund called with", string(args))
		return "rf_77", nil
	}

	e, err := ledger.Do(ctx, run, refund)
	fmt.Println(e.State, errors.Is(err, effect.ErrAwaitingApproval))

	// The person reads the arguments and their hash, and approves.
	if _, err := ledger.Approve(ctx, effect.Approval{Tenant: "default", Key: "refund:o-1", ArgsHash: e.ArgsHash(), By: "alice"}); err != nil {
		log.Fatal(err)
	}
	e, err = ledger.Do(ctx, run, refund)
	fmt.Println(e.State, e.ProviderRef, e.DecidedBy, err)

	// Changed arguments are a new intent: a new key and a new approval.
	run.Args = map[string]any{"order": "o-1", "cents": 99999}
	_, err = ledger.Do(ctx, run, refund)
	fmt.Println(errors.Is(err, store.ErrIdempotencyMismatch))
	// Output:
	// AWAITING_APPROVAL true
	// refund called with {"cents":1250,"order":"o-1"}
	// COMPLETED rf_77 alice <nil>
	// true
}
