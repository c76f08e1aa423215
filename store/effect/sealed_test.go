package effect_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/effect"
	_ "github.com/eventlite/eventlite/store/postgres" // PostgreSQL addresses, when EVENTLITE_TEST_POSTGRES is set
	"github.com/eventlite/eventlite/store/storetest"
)

// onEngines runs test on a fresh SQLite file and, with
// EVENTLITE_TEST_POSTGRES, a fresh PostgreSQL schema; open opens a store
// on that database (again, for a second store or a restart).
func onEngines(t *testing.T, test func(t *testing.T, open func(opts *store.Options) *store.Store)) {
	opener := func(t *testing.T, addr string) func(opts *store.Options) *store.Store {
		return func(opts *store.Options) *store.Store {
			t.Helper()
			s, err := store.Open(context.Background(), addr, opts)
			if err != nil {
				t.Fatalf("open %s: %v", addr, err)
			}
			t.Cleanup(func() {
				if err := s.CheckInvariants(context.Background()); err != nil {
					t.Errorf("after the test: %v", err)
				}
				_ = s.Close()
			})
			return s
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		test(t, opener(t, filepath.Join(t.TempDir(), "fx.db")))
	})
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv(storetest.PostgresEnv) == "" {
			t.Skipf("set %s to run on PostgreSQL", storetest.PostgresEnv)
		}
		test(t, opener(t, storetest.PostgresSchema(t, storetest.PostgresBase(t))))
	})
}

// rawColumns reads an effect's stored args and last_error behind the
// ledger's back.
func rawColumns(t *testing.T, s *store.Store, key string) string {
	t.Helper()
	var args, lastError string
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT COALESCE(args, ''), COALESCE(last_error, '') FROM effects WHERE effect_key = $1`, key).Scan(&args, &lastError)
	})
	if err != nil {
		t.Fatal(err)
	}
	return args + " " + lastError
}

// TestSealedArgumentsThroughTheLedger: on both engines, an effect with an
// ErasureKey keeps its arguments and error text sealed in the table,
// while the ledger's every path (a failed run and its retry, a request
// for approval, the approval, ResumeApproved) reads and passes them in
// clear; a store without the master key lists them hidden and refuses to
// approve them.
func TestSealedArgumentsThroughTheLedger(t *testing.T) {
	onEngines(t, func(t *testing.T, open func(opts *store.Options) *store.Store) {
		ctx := context.Background()
		master := drivertest.MasterKey(t, 3232)
		s := open(&store.Options{MasterKey: master})
		ledger := effect.For(s)
		const email = "alice.sealed@example.org"

		// A failed run: the error text holds the address too.
		mail := effect.Intent{Tenant: "default", Key: "mail-1", Args: map[string]string{"to": email}, ErasureKey: "alice"}
		var got []string
		send := func(_ context.Context, args json.RawMessage) (string, error) {
			got = append(got, string(args))
			if len(got) == 1 {
				return "", errors.New("no such mailbox " + email)
			}
			return "msg-1", nil
		}
		if e, err := ledger.Do(ctx, mail, send); err == nil || e.State != effect.Failed {
			t.Fatalf("first run: %+v, %v; want FAILED", e, err)
		}
		if raw := rawColumns(t, s, "mail-1"); strings.Contains(raw, email) || !strings.HasPrefix(raw, "e1:") {
			t.Fatalf("stored columns %q: want them sealed under the subject", raw)
		}
		if e, ok, err := ledger.Get(ctx, "default", "mail-1"); err != nil || !ok || !strings.Contains(string(e.Args), email) ||
			!strings.Contains(e.LastError, email) || e.ErasureKey != "alice" {
			t.Fatalf("Get: %+v, %v, %v; want the arguments and error in clear", e, ok, err)
		}
		if e, err := ledger.Do(ctx, mail, send); err != nil || e.State != effect.Completed || e.ProviderRef != "msg-1" {
			t.Fatalf("the retry: %+v, %v", e, err)
		}
		if len(got) != 2 || got[0] != got[1] || !strings.Contains(got[1], email) {
			t.Fatalf("the calls received %q: want the stored arguments, in clear, twice", got)
		}

		// A request for approval, approved by its hash, run by
		// ResumeApproved.
		refund := effect.Intent{Tenant: "default", Key: "refund-1", Kind: effect.Irreversible, NeedsApproval: true, RequestedBy: "svc",
			Args: map[string]string{"iban": "alice-iban-32"}, ErasureKey: "alice"}
		if _, err := ledger.Do(ctx, refund, send); !errors.Is(err, effect.ErrAwaitingApproval) {
			t.Fatalf("Do needing approval: %v", err)
		}
		list, err := ledger.List(ctx, effect.Filter{States: []effect.State{effect.AwaitingApproval}})
		if err != nil || len(list) != 1 || !strings.Contains(string(list[0].Args), "alice-iban-32") {
			t.Fatalf("List: %+v, %v", list, err)
		}

		// Without the master key: hidden, and not approvable.
		plain := open(nil)
		if e, _, err := effect.For(plain).Get(ctx, "default", "refund-1"); err != nil || !e.ArgsEncrypted || e.Args != nil {
			t.Fatalf("Get without the master key: %+v, %v; want the arguments hidden", e, err)
		}
		if _, err := effect.For(plain).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund-1", ArgsHash: list[0].ArgsHash(), By: "ops"}); !errors.Is(err, store.ErrNoMasterKey) {
			t.Fatalf("Approve without the master key: %v, want ErrNoMasterKey", err)
		}

		if e, err := ledger.Approve(ctx, effect.Approval{Tenant: "default", Key: "refund-1", ArgsHash: list[0].ArgsHash(), By: "ops"}); err != nil || e.State != effect.Approved {
			t.Fatalf("Approve: %+v, %v", e, err)
		}
		if raw := rawColumns(t, s, "refund-1"); strings.Contains(raw, "alice-iban-32") {
			t.Fatalf("after the approval the stored columns hold the arguments in clear: %q", raw)
		}
		ran, err := ledger.ResumeApproved(ctx, "default", func(_ context.Context, e effect.Effect, args json.RawMessage) (string, error) {
			if !strings.Contains(string(args), "alice-iban-32") {
				t.Errorf("ResumeApproved passed %q: want the arguments in clear", args)
			}
			return "rf-1", nil
		})
		if err != nil || len(ran) != 1 || ran[0].State != effect.Completed {
			t.Fatalf("ResumeApproved: %+v, %v", ran, err)
		}
	})
}
