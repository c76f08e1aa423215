package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/storetest"
)

// rawEffect reads an effect's stored args and last_error behind the
// ledger's back.
func rawEffect(t *testing.T, s *store.Store, key string) (args, lastError string) {
	t.Helper()
	err := s.Update(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT COALESCE(args, ''), COALESCE(last_error, '') FROM effects WHERE effect_key = $1`, key).Scan(&args, &lastError)
	})
	if err != nil {
		t.Fatal(err)
	}
	return args, lastError
}

// TestEffectArgsSealedUnderSubject: an effect with an ErasureKey stores
// its arguments and error text encrypted with the subject's data key
// (nothing of them in clear in the table or the file), reads them back
// in clear, and after Forget reads them as erased; a Do or an approval
// after the forget is refused. Before the fix the arguments were stored
// in clear and survived the forget.
func TestEffectArgsSealedUnderSubject(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fx.db")
	master := drivertest.MasterKey(t, 3636)
	s := storetest.MustOpenPath(t, path, &store.Options{MasterKey: master})
	email := "alice.fx36@example.org"
	run := effect.Intent{Tenant: "default", Key: "mail-1", Args: map[string]string{"to": email}, ErasureKey: "alice"}
	e, err := effect.For(s).Do(ctx, run, func(ctx context.Context, args json.RawMessage) (string, error) {
		if !strings.Contains(string(args), email) {
			t.Errorf("the call got %s, want the arguments in clear", args)
		}
		return "", errors.New("mailer refused " + email)
	})
	if err == nil || e.State != effect.Failed {
		t.Fatalf("Do: %+v, %v; want FAILED", e, err)
	}
	args, lastErr := rawEffect(t, s, "mail-1")
	if strings.Contains(args, email) || strings.Contains(lastErr, email) || !strings.HasPrefix(args, "e1:") || !strings.HasPrefix(lastErr, "e1:") {
		t.Fatalf("stored args %q, last_error %q: want both sealed", args, lastErr)
	}
	got, ok, err := effect.For(s).Get(ctx, "default", "mail-1")
	if err != nil || !ok || !strings.Contains(string(got.Args), email) || !strings.Contains(got.LastError, email) || got.ErasureKey != "alice" {
		t.Fatalf("Get: %+v, %v, %v; want the arguments and error in clear", got, ok, err)
	}
	// An approval request of the same subject, listed in clear.
	appr := effect.Intent{Tenant: "default", Key: "refund-1", Kind: effect.Irreversible, NeedsApproval: true, RequestedBy: "svc",
		Args: map[string]string{"iban": "alice-iban-36"}, ErasureKey: "alice"}
	if _, err := effect.For(s).Do(ctx, appr, func(context.Context, json.RawMessage) (string, error) { return "x", nil }); !errors.Is(err, effect.ErrAwaitingApproval) {
		t.Fatalf("Do of an effect needing approval: %v", err)
	}
	list, err := effect.For(s).List(ctx, effect.Filter{States: []effect.State{effect.AwaitingApproval}})
	if err != nil || len(list) != 1 || !strings.Contains(string(list[0].Args), "alice-iban-36") {
		t.Fatalf("List: %+v, %v", list, err)
	}
	hash := list[0].ArgsHash()
	if ok, _ := store.CheckpointTruncate(ctx, s); !ok {
		t.Fatal("checkpoint blocked")
	}
	if in := holds(t, []byte(email), path); len(in) > 0 {
		t.Fatalf("the effect's plaintext is in %v", in)
	}

	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	got, _, err = effect.For(s).Get(ctx, "default", "mail-1")
	if err != nil || !got.ArgsErased || got.Args != nil || got.LastError != "" || got.State != effect.Failed {
		t.Fatalf("Get after forget: %+v, %v; want the arguments and error erased, the state kept", got, err)
	}
	_, err = effect.For(s).Do(ctx, run, func(context.Context, json.RawMessage) (string, error) { return "x", nil })
	if !errors.Is(err, store.ErrInvalidEvent) || !strings.Contains(err.Error(), "forgotten") {
		t.Errorf("Do after forget: %v, want refused naming the forget", err)
	}
	_, err = effect.For(s).Approve(ctx, effect.Approval{Tenant: "default", Key: "refund-1", ArgsHash: hash, By: "ops"})
	if !errors.Is(err, store.ErrInvalidEvent) {
		t.Errorf("approve after forget: %v, want refused", err)
	}
	if _, err := effect.For(s).Reject(ctx, effect.Rejection{Tenant: "default", Key: "refund-1", By: "ops", Reason: "subject forgotten"}); err != nil {
		t.Errorf("reject after forget: %v", err)
	}
	// A reconcile's error text after the forget is written and read.
	if _, err := effect.For(s).Compensate(ctx, "default", "mail-1"); err == nil {
		t.Error("compensate of a FAILED effect succeeded")
	}

	// Without the master key: refused before anything is stored.
	plain := storetest.MustOpen(t, nil)
	_, err = effect.For(plain).Do(ctx, effect.Intent{Tenant: "default", Key: "k", Args: 1, ErasureKey: "bob"}, func(context.Context, json.RawMessage) (string, error) { return "", nil })
	if !errors.Is(err, store.ErrNoMasterKey) {
		t.Errorf("an effect with ErasureKey and no master key: %v, want ErrNoMasterKey", err)
	}
	if _, ok, _ := effect.For(plain).Get(ctx, "default", "k"); ok {
		t.Error("the refused effect was stored")
	}
}
