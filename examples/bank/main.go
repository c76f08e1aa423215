// Command bank is a small bank account service on eventlite, runnable as
// it stands:
//
//	go run ./examples/bank                          # the demo, on a database in a temp dir
//	go run ./examples/bank --db bank.db             # the demo, on bank.db (kept)
//	go run ./examples/bank --db bank.db replay balances   # rebuild the read model
//	go run ./examples/bank --db 'postgres://...&eventlite_schema=bank'   # the same on PostgreSQL
//
// Its handler SQL (? placeholders, an upsert with a table alias) runs
// unchanged on both engines: docs/handler-sql.md.
//
// An account aggregate, written per Go type, whose commands carry an operation id (a retry
// returns the first result, appends nothing) and, when a form showed the
// account, the version it showed (a stale one is refused), a rule refusing
// overdrafts, a typed balances projection read right after each command
// (projection.WaitFor on the last appended position), the relay printing
// the published CloudEvents,
// and the replay command mounted over the service's own projection. Run
// twice on one --db, every command is a retry.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/replay/replaycmd"
	"github.com/eventlite/eventlite/store"
)

// Events, and the commands that produce them.
type (
	AccountOpened struct {
		Owner string `json:"owner"`
	}
	MoneyDeposited struct {
		Amount int64 `json:"amount"`
	}
	MoneyWithdrawn struct {
		Amount int64 `json:"amount"`
	}

	OpenAccount struct {
		Owner string `json:"owner"`
	}
	Deposit struct {
		Amount int64 `json:"amount"`
	}
	Withdraw struct {
		Amount int64 `json:"amount"`
	}
)

// Account is the state folded from an account's events.
type Account struct {
	Open    bool
	Balance int64
}

var (
	ErrNoAccount         = errors.New("no such account")
	ErrBadAmount         = errors.New("the amount must be positive")
	ErrInsufficientFunds = errors.New("insufficient funds")
)

func registry() *envelope.Registry {
	var r envelope.Registry
	envelope.Register[AccountOpened](&r, "account.opened")
	envelope.Register[MoneyDeposited](&r, "account.deposited")
	envelope.Register[MoneyWithdrawn](&r, "account.withdrawn")
	return &r
}

// accounts is the account aggregate, written per Go type: one evolver per
// event, one decider per command, each receiving its own type.
// aggregate.New refuses it if an event type in reg has no evolver.
func accounts(reg *envelope.Registry) aggregate.Definition[Account] {
	var ev aggregate.Evolvers[Account]
	aggregate.On(&ev, func(a Account, _ aggregate.EventOf[AccountOpened]) Account {
		a.Open = true
		return a
	})
	aggregate.On(&ev, func(a Account, e aggregate.EventOf[MoneyDeposited]) Account {
		a.Balance += e.Payload.Amount
		return a
	})
	aggregate.On(&ev, func(a Account, e aggregate.EventOf[MoneyWithdrawn]) Account {
		a.Balance -= e.Payload.Amount
		return a
	})
	var dc aggregate.Deciders[Account]
	aggregate.OnCommand(&dc, func(a Account, c aggregate.CommandOf[OpenAccount]) ([]AccountOpened, error) {
		if a.Open {
			return nil, nil // already open: nothing to do
		}
		return []AccountOpened{AccountOpened(c.Payload)}, nil
	})
	aggregate.OnCommand(&dc, func(a Account, c aggregate.CommandOf[Deposit]) ([]MoneyDeposited, error) {
		switch {
		case !a.Open:
			return nil, ErrNoAccount
		case c.Payload.Amount <= 0:
			return nil, ErrBadAmount
		}
		return []MoneyDeposited{MoneyDeposited(c.Payload)}, nil
	})
	aggregate.OnCommand(&dc, func(a Account, c aggregate.CommandOf[Withdraw]) ([]MoneyWithdrawn, error) {
		switch {
		case !a.Open:
			return nil, ErrNoAccount
		case c.Payload.Amount > a.Balance: // the business rule: no overdraft
			return nil, fmt.Errorf("%w: balance %d, asked %d", ErrInsufficientFunds, a.Balance, c.Payload.Amount)
		case c.Payload.Amount <= 0:
			return nil, ErrBadAmount
		}
		return []MoneyWithdrawn{MoneyWithdrawn(c.Payload)}, nil
	})
	return aggregate.Definition[Account]{Name: "account", Registry: reg, Evolvers: &ev, Deciders: &dc, Source: "/bank"}
}

// balances is the read model: one row per account. It is typed: one
// handler per event's Go type, each receiving the decoded data and the
// event's metadata; the event types it reads come from the registry. Its
// SQL writes ? placeholders and an aliased upsert, and runs on SQLite and
// PostgreSQL alike (scenario_test.go runs it on both).
func balances(reg *envelope.Registry) projection.Projection {
	// The upsert names the table by an alias (AS t): an unqualified
	// column on the right of SET is ambiguous on PostgreSQL, and the
	// table's own name is a shadow table's during a rebuild.
	const upsert = ` AS t (tenant, account, owner, balance) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant, account) DO UPDATE SET balance = t.balance + excluded.balance`
	h := projection.NewHandlers(reg)
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[AccountOpened]) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table("balances")+upsert, e.Tenant, e.Stream, e.Data.Owner, 0)
		return err
	})
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[MoneyDeposited]) error {
		_, err := tx.ExecContext(ctx, `UPDATE `+tx.Table("balances")+` SET balance = balance + ? WHERE tenant = ? AND account = ?`,
			e.Data.Amount, e.Tenant, e.Stream)
		return err
	})
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[MoneyWithdrawn]) error {
		_, err := tx.ExecContext(ctx, `UPDATE `+tx.Table("balances")+` SET balance = balance - ? WHERE tenant = ? AND account = ?`,
			e.Data.Amount, e.Tenant, e.Stream)
		return err
	})
	return projection.Projection{
		Name:     "balances",
		Handlers: h,
		Tables: []projection.Table{{Name: "balances", Schema: `CREATE TABLE {table} (
			tenant TEXT NOT NULL, account TEXT NOT NULL, owner TEXT NOT NULL, balance BIGINT NOT NULL,
			PRIMARY KEY (tenant, account))`}},
	}
}

// Bank is the service: the store, the account handler and the runner that
// keeps the balances up to date.
type Bank struct {
	Store    *store.Store
	Accounts *aggregate.Handler[Account]
	log      hclog.Logger
	stop     context.CancelFunc
	done     chan error
}

// OpenBank opens the database at path and starts the balances runner.
func OpenBank(ctx context.Context, path string, log hclog.Logger) (*Bank, error) {
	s, err := store.Open(ctx, path, &store.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	reg := registry()
	h, err := aggregate.New(s, accounts(reg), &aggregate.Options{Logger: log})
	if err == nil {
		var r *projection.Runner
		if r, err = projection.NewRunner(s, balances(reg), &projection.RunnerOptions{Logger: log}); err == nil {
			runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
			b := &Bank{Store: s, Accounts: h, log: log, stop: stop, done: make(chan error, 1)}
			go func() { b.done <- r.Run(runCtx) }()
			return b, nil
		}
	}
	return nil, errors.Join(err, s.Close())
}

// Close stops the runner and closes the store.
func (b *Bank) Close() error {
	b.stop()
	err := <-b.done
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return errors.Join(err, b.Store.Close())
}

// Do handles a command on an account and returns its result and the
// account's balance as the read model has it, with the command included
// (read your writes). expected is the account's version the user was
// shown (store.Any: none): when the account has moved since, the command
// fails with a *store.ConflictError and the user must look again.
func (b *Bank) Do(ctx context.Context, account, opID string, expected store.Expected, cmd any) (aggregate.Result, int64, error) {
	res, err := b.Accounts.Handle(ctx, aggregate.Command{Stream: account, OperationID: opID, Expected: expected, Payload: cmd})
	if err != nil {
		return res, 0, err
	}
	// A request does not wait forever; long enough, though, for a runner
	// to take over the lease of a process that was killed (15s). A command
	// that appended nothing has LastPosition 0: nothing to wait for.
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := projection.WaitFor(waitCtx, b.Store, "balances", res.LastPosition()); err != nil {
		return res, 0, err
	}
	bal, err := b.Balance(ctx, account)
	return res, bal, err
}

// Balance reads an account's balance from the read model.
func (b *Bank) Balance(ctx context.Context, account string) (bal int64, err error) {
	err = b.Store.View(ctx, func(tx *store.ReadTx) error {
		return tx.QueryRowContext(ctx, `SELECT balance FROM balances WHERE tenant = 'default' AND account = ?`, account).Scan(&bal)
	})
	return bal, err
}

// Relay publishes what the outbox holds to w, as CloudEvents JSON Lines,
// and returns when it is drained.
func (b *Bank) Relay(ctx context.Context, w io.Writer) error {
	pub := publish.NewStdout(w)
	r, err := publish.New(publish.Options{Store: b.Store, Publisher: pub, Once: true, Logger: b.log})
	if err != nil {
		return err
	}
	return errors.Join(r.Run(ctx), pub.Close())
}

// demo runs a short script of commands and prints what each did.
func demo(ctx context.Context, b *Bank, out io.Writer) error {
	steps := []struct {
		say, account, opID string
		expected           store.Expected // the version a form showed; Any: none
		cmd                any
	}{
		{"open acc-1 for alice", "acc-1", "open-1", store.Any, OpenAccount{Owner: "alice"}},
		{"deposit 100 to acc-1", "acc-1", "dep-1", store.Any, Deposit{Amount: 100}},
		{"deposit 100 to acc-1", "acc-1", "dep-1", store.Any, Deposit{Amount: 100}}, // a retry after a lost reply
		{"withdraw 30 from acc-1", "acc-1", "wd-1", store.Exact(2), Withdraw{Amount: 30}},
		{"withdraw 500 from acc-1", "acc-1", "wd-2", store.Any, Withdraw{Amount: 500}},    // refused: no overdraft
		{"withdraw 20 from acc-1", "acc-1", "wd-3", store.Exact(2), Withdraw{Amount: 20}}, // refused: a stale form
		{"open acc-2 for bob", "acc-2", "open-2", store.Any, OpenAccount{Owner: "bob"}},
		{"deposit 50 to acc-2", "acc-2", "dep-2", store.Any, Deposit{Amount: 50}},
	}
	for _, st := range steps {
		res, bal, err := b.Do(ctx, st.account, st.opID, st.expected, st.cmd)
		what := fmt.Sprintf("%-24s %-14s", st.say, "(op "+st.opID+"):")
		switch {
		case errors.Is(err, ErrInsufficientFunds), errors.Is(err, ErrNoAccount), errors.Is(err, ErrBadAmount):
			fmt.Fprintln(out, what, "refused:", err)
		case errors.Is(err, store.ErrConflict):
			fmt.Fprintln(out, what, "refused, the account changed since the form was shown:", err)
		case err != nil:
			return err
		case res.Replayed:
			fmt.Fprintf(out, "%s already done: version %d, balance %d\n", what, res.Version, bal)
		default:
			fmt.Fprintf(out, "%s ok: version %d, balance %d\n", what, res.Version, bal)
		}
	}
	fmt.Fprintln(out, "\nthe relay publishes the outbox to stdout:")
	return b.Relay(ctx, out)
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the program: bank [--db PATH] [-v] [replay NAME [flags]].
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bank", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "the database file, or a postgres:// address (default: a file in a new temp dir, removed at exit)")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: bank [--db PATH] [-v]\t\trun the demo\n       bank --db PATH %s\n\n", replaycmd.Usage("replay"))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	level := hclog.Warn
	if *verbose {
		level = hclog.Debug
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "bank", Level: level, Output: stderr})

	if fs.Arg(0) == "replay" {
		if *db == "" {
			fmt.Fprintln(stderr, "bank: replay needs --db PATH")
			return 2
		}
		return replaycmd.Run(ctx, fs.Args()[1:], replaycmd.Config{
			Open: func(ctx context.Context) (*store.Store, error) {
				return store.Open(ctx, *db, &store.Options{Logger: log})
			},
			Projections: []projection.Projection{balances(registry())},
			Stdout:      stdout,
			Stderr:      stderr,
			Logger:      log,
		})
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	path := *db
	if path == "" {
		dir, err := os.MkdirTemp("", "bank-")
		if err != nil {
			fmt.Fprintln(stderr, "bank:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "bank.db")
	}
	b, err := OpenBank(ctx, path, log)
	if err == nil {
		err = errors.Join(demo(ctx, b, stdout), b.Close())
	}
	if err != nil {
		fmt.Fprintln(stderr, "bank:", err)
		return 1
	}
	return 0
}
