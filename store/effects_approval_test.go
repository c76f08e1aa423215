package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/storetest"
)

// A file from before approvals: its effects become external effects
// without arguments, and keep running as before.
func TestEffectMigrationOfOldRows(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	entries, err := os.ReadDir(filepath.Join("internal", "sqlitedriver", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	version := 0
	for _, e := range entries {
		n, _, _ := strings.Cut(e.Name(), "_")
		if v, _ := strconv.Atoi(n); v < 10 {
			b, err := os.ReadFile(filepath.Join("internal", "sqlitedriver", "migrations", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			stmts = append(stmts, string(b))
			version = v
		}
	}
	stmts = append(stmts, fmt.Sprintf("PRAGMA user_version = %d", version), "PRAGMA journal_mode = WAL",
		`INSERT INTO effects (tenant, effect_key, state, provider_ref, attempts, created_at, updated_at) VALUES ('default', 'email:1', 'COMPLETED', 'msg-1', 1, 1, 2)`,
		`INSERT INTO effects (tenant, effect_key, state, attempts, last_error, created_at, updated_at, started_at) VALUES ('default', 'charge:1', 'UNKNOWN', 1, 'timeout', 1, 2, 1)`,
		`INSERT INTO effects (tenant, effect_key, state, created_at, updated_at) VALUES ('acme', 'sms:1', 'RESERVED', 1, 1)`)
	storetest.RawExec(t, path, stmts...)

	s := storetest.MustOpenPath(t, path, nil)
	all, err := effect.For(s).List(ctx, effect.Filter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("%+v %v", all, err)
	}
	nullHash := sha256.Sum256([]byte("null"))
	for _, e := range all {
		if e.Kind != effect.External || e.Args != nil || e.NeedsApproval || e.Resource != "" || e.RequestedBy != "" ||
			!e.RequestedAt.IsZero() || !e.DecidedAt.IsZero() || e.ArgsHash() != hex.EncodeToString(nullHash[:]) {
			t.Errorf("migrated %+v", e)
		}
	}
	if e := drivertest.MustGetEffect(t, s, "default", "email:1"); e.State != effect.Completed || e.ProviderRef != "msg-1" || e.Attempts != 1 {
		t.Errorf("migrated row lost its facts: %+v", e)
	}
	calls := 0
	call := func(context.Context) (string, error) { calls++; return "sms-1", nil }
	if _, err := effect.For(s).Run(ctx, "default", "email:1", call); err != nil || calls != 0 {
		t.Errorf("completed old effect: %v, %d calls", err, calls)
	}
	if _, err := effect.For(s).Run(ctx, "default", "charge:1", call); !errors.Is(err, effect.ErrState) || calls != 0 {
		t.Errorf("unknown old effect retried blindly: %v", err)
	}
	if e, err := effect.For(s).Run(ctx, "acme", "sms:1", call); err != nil || e.State != effect.Completed || calls != 1 {
		t.Errorf("reserved old effect: %+v %v", e, err)
	}
	if _, err := effect.For(s).Do(ctx, effect.Intent{Tenant: "default", Key: "email:1", Args: map[string]int{"n": 1}}, func(context.Context, json.RawMessage) (string, error) {
		return "", nil
	}); !errors.Is(err, store.ErrIdempotencyMismatch) {
		t.Errorf("arguments on an old effect: %v", err)
	}
}
