package serve_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// keyspaceEngine is one engine of TestIdempotencyKeyNamespaces: where
// the store lives and how to put its ledger back the way a binary before
// the namespaces left it.
type keyspaceEngine struct {
	name string
	// addr returns the store's address (a file, a PostgreSQL URL) and a
	// function that rewrites its hashed keys to the old form and rewinds
	// its schema to before the migration that moves them.
	addr func(t *testing.T) (string, func(t *testing.T))
}

// The migration that moves hashed keys: SQLite's 17, PostgreSQL's 2.
const (
	sqliteKeyspaceMigration   = 17
	postgresKeyspaceMigration = 2
)

var keyspaceEngines = []keyspaceEngine{
	{name: "sqlite", addr: func(t *testing.T) (string, func(t *testing.T)) {
		path := filepath.Join(t.TempDir(), "eventlite.db")
		return path, func(t *testing.T) {
			storetest.RawExec(t, path,
				`UPDATE operations SET operation_id = 'http:sha256:' || substr(operation_id, 13) WHERE operation_id GLOB 'http.sha256:*'`,
				"PRAGMA user_version = "+strconv.Itoa(sqliteKeyspaceMigration-1))
		}
	}},
	{name: "postgres", addr: func(t *testing.T) (string, func(t *testing.T)) {
		base := storetest.PostgresBase(t)
		addr := storetest.PostgresSchema(t, base)
		u, err := url.Parse(addr)
		if err != nil {
			t.Fatal(err)
		}
		schema := u.Query().Get("eventlite_schema")
		return addr, func(t *testing.T) {
			db, err := sql.Open("pgx", base)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, q := range []string{
				`UPDATE ` + schema + `.operations SET operation_id = 'http:sha256:' || substr(operation_id, 13) WHERE operation_id LIKE 'http.sha256:%'`,
				`DELETE FROM ` + schema + `.schema_migrations WHERE version >= ` + strconv.Itoa(postgresKeyspaceMigration),
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		}
	}},
}

// TestIdempotencyKeyNamespaces: a key too long for the ledger is recorded
// under its hash in a namespace of its own. A long key recorded the old
// way ("http:sha256:<hex>", as the literal key "sha256:<hex>" is too)
// and retried after the upgrade gets its first answer, and the literal
// key "sha256:<hex>" is a key of its own (201 for a new request, not
// 422), on SQLite and on PostgreSQL. The migration moves only what an
// HTTP request recorded that way: another command's id of that form, and
// HTTP ids that are not 64 lowercase hex digits, stay.
func TestIdempotencyKeyNamespaces(t *testing.T) {
	for _, eng := range keyspaceEngines {
		t.Run(eng.name, func(t *testing.T) {
			ctx := context.Background()
			addr, downgrade := eng.addr(t)
			long := strings.Repeat("k", 255)
			sum := sha256.Sum256([]byte(long))
			literal := "sha256:" + hex.EncodeToString(sum[:])
			// Event candidates: the server picks each event's id, so only
			// the ledger tells a retry from a new request.
			post := func(ts *testServer, data, key string) response {
				return ts.do("POST", streamEvents("default", "c"), []byte(data), "Content-Type", "application/json", "ce-type", "t", "Idempotency-Key", key)
			}

			s, err := store.Open(ctx, addr, nil)
			if err != nil {
				t.Fatal(err)
			}
			h, err := serve.New(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			first := post(&testServer{t: t, s: s, h: h, url: srv.URL}, `{"n":1}`, long)
			// Rows the migration leaves where they are: another command's
			// id of the old form, and HTTP ids that are not a hash (63
			// digits, upper case).
			hexOf := hex.EncodeToString(sum[:])
			kept := []store.Operation{
				{Tenant: "other", ID: "http:sha256:" + hexOf, Type: "order.place"},
				{Tenant: "default", ID: "http:sha256:" + hexOf[:63], Type: "http.append"},
				{Tenant: "other", ID: "http:sha256:" + strings.ToUpper(hexOf), Type: "http.append"},
			}
			if err := s.Update(ctx, func(tx *store.Tx) error {
				for i, op := range kept {
					op.InputHash, op.Result = "h", []byte(strconv.Itoa(i))
					if _, err := store.Bookkeeping(inside.Key{}, tx).RecordOperation(ctx, op); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			srv.Close()
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if first.status != 201 {
				t.Fatalf("long key: %d %s", first.status, first.body)
			}
			downgrade(t)

			s, err = store.Open(ctx, addr, nil) // migrates
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := s.CheckInvariants(context.Background()); err != nil {
					t.Errorf("after the test: %v", err)
				}
				_ = s.Close()
			})
			for _, op := range kept {
				if got, ok, err := s.Aggregates().Operation(ctx, op.Tenant, op.ID); !ok || err != nil || got.Type != op.Type {
					t.Errorf("operation %s %q (%s) after the migration: %v %v %+v, want it kept", op.Tenant, op.ID, op.Type, ok, err, got)
				}
			}
			ts := serverOn(t, s, nil)
			again := post(ts, `{"n":1}`, long)
			if again.status != 201 || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" ||
				again.header.Get("ETag") != first.header.Get("ETag") {
				t.Errorf("long key retried across the upgrade: %d %v %s, want the first answer %s", again.status, again.header, again.body, first.body)
			}
			lit := post(ts, `{"n":2}`, literal)
			if lit.status != 201 || lit.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("literal key %q: %d %s, want 201 for a new request", literal, lit.status, lit.body)
			}
			if r := post(ts, `{"n":2}`, literal); r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" || string(r.body) != string(lit.body) {
				t.Errorf("literal key retried: %d %v %s", r.status, r.header, r.body)
			}
			if n := len(ts.events("default", "c")); n != 2 {
				t.Errorf("%d events, want 2 (one per key)", n)
			}
		})
	}
}
