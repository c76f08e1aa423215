package erasure_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

func TestErasureEncryptsAndReadsDecrypt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "e.db")
	s := storetest.MustOpenPath(t, path, &store.Options{MasterKey: drivertest.MasterKey(t, 1)})
	email := "alice.f3a9@example.org"
	res, err := s.Append(ctx, "default", "user-1", store.NoStream, drivertest.Personal(t, "alice", email))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Events[0].Data), email) {
		t.Errorf("append result data %s, want the plaintext", res.Events[0].Data)
	}
	evs := drivertest.ReadStream(t, s, "default", "user-1")
	if len(evs) != 1 || !strings.Contains(string(evs[0].Data), email) || envelope.Erased(evs[0]) || envelope.Encrypted(evs[0]) {
		t.Fatalf("ReadStream: %+v, want the plaintext", evs)
	}
	for e, err := range s.ReadAll(ctx, store.ReadAllOptions{}) {
		if err != nil || !strings.Contains(string(e.Data), email) {
			t.Fatalf("ReadAll: %s, %v", e.Data, err)
		}
	}
	byID, err := s.EventByID(ctx, "default", res.Events[0].ID)
	if err != nil || !strings.Contains(string(byID.Data), email) {
		t.Fatalf("EventByID: %s, %v", byID.Data, err)
	}
	rows, err := outbox.For(s).Read(ctx, outbox.ReadOptions{})
	if err != nil || len(rows) != 1 || !strings.Contains(string(rows[0].Event.Data), email) {
		t.Fatalf("outbox read (what the relay publishes): %v, %v", rows, err)
	}
	var stored []byte
	if err := s.Update(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT data FROM events WHERE position = ?`, res.FirstPosition()).Scan(&stored)
	}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte(email)) || bytes.Contains(stored, []byte("email")) {
		t.Fatalf("the events table holds the data in clear: %q", stored)
	}
}

func TestErasureNeedsMasterKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "e.db")
	plain := storetest.MustOpenPath(t, path, nil)
	_, err := plain.Append(ctx, "default", "user-1", store.Any, drivertest.Personal(t, "alice", "a@example.org"))
	if !errors.Is(err, store.ErrNoMasterKey) || !errors.Is(err, store.ErrMasterKey) || !strings.Contains(err.Error(), "--master-key-file") {
		t.Fatalf("append with erasurekey and no master key: %v, want ErrNoMasterKey naming the flag", err)
	}
	if v, err := plain.StreamVersion(ctx, "default", "user-1"); err != nil || v != 0 {
		t.Fatalf("after the refused append the stream has version %d (%v), want nothing stored", v, err)
	}

	keyed := storetest.MustOpenPath(t, path, &store.Options{MasterKey: drivertest.MasterKey(t, 2)})
	if _, err := keyed.Append(ctx, "default", "user-1", store.Any, drivertest.Personal(t, "alice", "a@example.org")); err != nil {
		t.Fatal(err)
	}
	evs := drivertest.ReadStream(t, plain, "default", "user-1")
	if len(evs) != 1 || evs[0].Data != nil || !envelope.Encrypted(evs[0]) || envelope.Erased(evs[0]) || evs[0].Type != "user.registered" {
		t.Fatalf("read without a master key: %+v, want the attributes, no data, dataencrypted", evs)
	}
	if enc, err := erasure.For(plain).Encrypted(ctx); err != nil || !enc {
		t.Fatalf("Encrypted: %v, %v, want true", enc, err)
	}
	if _, err := new(envelope.Registry).Decode(evs[0]); !errors.Is(err, envelope.ErrEncrypted) {
		t.Errorf("Decode of an encrypted event read without the key: %v, want ErrEncrypted", err)
	}
}

func TestErasureWrongMasterKeyIsAnErrorNotErased(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "e.db")
	s := storetest.MustOpenPath(t, path, &store.Options{MasterKey: drivertest.MasterKey(t, 3)})
	if _, err := s.Append(ctx, "default", "user-1", store.Any, drivertest.Personal(t, "alice", "a@example.org")); err != nil {
		t.Fatal(err)
	}
	// A store uses one master key: another one is refused at Open,
	// naming both keys, before anything is read or written.
	wrong, err := store.Open(ctx, path, &store.Options{MasterKey: drivertest.MasterKey(t, 4)})
	var me *store.StoreMasterKeyError
	if !errors.As(err, &me) || !errors.Is(err, store.ErrMasterKey) || !strings.Contains(err.Error(), "wrong master key") || !strings.Contains(err.Error(), me.Stored) || !strings.Contains(err.Error(), me.Given) {
		if err == nil {
			wrong.Close()
		}
		t.Fatalf("open with the wrong master key: %v; want a *StoreMasterKeyError naming both keys", err)
	}
}

func TestMasterKeyFile(t *testing.T) {
	dir := t.TempDir()
	key := drivertest.MasterKey(t, 5)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hexKey := []byte(strings.ToUpper(string(hexEncode(key))) + "\n")
	for _, p := range []string{write("raw", key), write("hex", hexKey)} {
		got, err := erasure.ReadMasterKeyFile(p)
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("%s: %x, %v", p, got, err)
		}
	}
	for name, b := range map[string][]byte{"short": key[:31], "nothex": bytes.Repeat([]byte("z"), 64), "long": append(key, 'x', 'y'), "empty": nil} {
		_, err := erasure.ReadMasterKeyFile(write(name, b))
		if !errors.Is(err, store.ErrMasterKey) || !strings.Contains(err.Error(), "want 32 raw bytes or 64 hex digits") {
			t.Errorf("%s: %v, want a clear ErrMasterKey", name, err)
		}
	}
	s := storetest.MustOpenPath(t, filepath.Join(dir, "e.db"), &store.Options{MasterKeyFile: filepath.Join(dir, "hex")})
	if !erasure.For(s).HasMasterKey() {
		t.Fatal("Options.MasterKeyFile: no master key")
	}
}

func hexEncode(b []byte) []byte {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return out
}

func TestForget(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "e.db")
	master := drivertest.MasterKey(t, 9)
	s := storetest.MustOpenPath(t, path, &store.Options{MasterKey: master})
	appended := map[string]envelope.Event{}
	for _, tenant := range []string{"a", "b"} {
		res, err := s.Append(ctx, tenant, "user-1", store.Any, drivertest.Personal(t, "alice", "alice@"+tenant), drivertest.Event(t, "user.seen", 1))
		if err != nil {
			t.Fatal(err)
		}
		appended[tenant] = res.Events[0]
		if _, err := s.Append(ctx, tenant, "user-2", store.Any, drivertest.Personal(t, "bob", "bob@"+tenant)); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, func(tx *store.Tx) error {
			if err := tx.SaveSnapshot(ctx, store.Snapshot{Tenant: tenant, Stream: "user-1", SchemaVersion: 1, Version: 2, State: []byte(`{"email":"alice@` + tenant + `"}`)}); err != nil {
				return err
			}
			if err := store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "p", Reason: string(projection.ReasonHandlerError), Tenant: tenant, EventID: res.Events[0].ID, Position: res.FirstPosition(),
				Event: mustJSON(t, res.Events[0])}); err != nil {
				return err
			}
			_, _, err := store.Bookkeeping(inside.Key{}, tx).Defer(ctx, inside.Deferred{Tenant: tenant, Consumer: "c", Subject: "user-1", Version: 9, EventID: res.Events[0].ID, Event: mustJSON(t, res.Events[0]), Reason: "gap"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	fr, err := erasure.For(s).Forget(ctx, "a", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if fr.Already || len(fr.Streams) != 1 || fr.Streams[0] != "user-1" || fr.Copies != 2 {
		t.Errorf("Forget result %+v, want stream user-1 and 2 copies", fr)
	}
	// Tenant a: alice's event is erased, its attributes intact.
	evs := drivertest.ReadStream(t, s, "a", "user-1")
	got, want := evs[0], appended["a"]
	if got.Data != nil || !envelope.Erased(got) || got.ID != want.ID || got.Type != want.Type || !got.Time.Equal(want.Time) ||
		got.Extensions[store.ExtErasureKey] != "alice" || got.DataContentType != want.DataContentType {
		t.Fatalf("alice's event after forget: %+v, want its attributes, no data, dataerased", got)
	}
	if _, err := new(envelope.Registry).Decode(got); !errors.Is(err, envelope.ErrErased) {
		t.Errorf("Decode of an erased event: %v, want ErrErased", err)
	}
	if evs[1].Data == nil || envelope.Erased(evs[1]) {
		t.Errorf("an event without erasurekey in the same stream was touched: %+v", evs[1])
	}
	if bob := drivertest.ReadStream(t, s, "a", "user-2"); !strings.Contains(string(bob[0].Data), "bob@a") {
		t.Errorf("another subject of the tenant: %s", bob[0].Data)
	}
	// Tenant b: nothing touched, as the file says (a store that opens it
	// now has no key in its cache).
	fresh := storetest.MustOpenPath(t, path, &store.Options{MasterKey: master})
	for _, st := range []*store.Store{s, fresh} {
		if b := drivertest.ReadStream(t, st, "b", "user-1"); !strings.Contains(string(b[0].Data), "alice@b") || envelope.Erased(b[0]) {
			t.Errorf("tenant b's alice after forgetting tenant a's: %+v", b[0])
		}
		if a := drivertest.ReadStream(t, st, "a", "user-1"); !envelope.Erased(a[0]) {
			t.Errorf("tenant a's alice after forget: %+v", a[0])
		}
	}
	if _, ok, _ := s.Aggregates().LoadSnapshot(ctx, "b", "user-1", 1); !ok {
		t.Error("tenant b's snapshot was dropped")
	}
	if _, ok, _ := s.Aggregates().LoadSnapshot(ctx, "a", "user-1", 1); ok {
		t.Error("tenant a's snapshot of a stream of alice's is still there")
	}
	for _, tenant := range []string{"a", "b"} {
		qs, err := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Tenant == tenant && strings.Contains(string(q.Event), "alice@") == (tenant == "a") {
				t.Errorf("quarantine copy of tenant %s: %s", tenant, q.Event)
			}
		}
	}
	var deferred []string
	if err := s.Update(ctx, func(tx *store.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT tenant || ':' || CAST(event AS TEXT) FROM deferred ORDER BY tenant`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d string
			if err := rows.Scan(&d); err != nil {
				return err
			}
			deferred = append(deferred, d)
		}
		return rows.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if len(deferred) != 2 || strings.Contains(deferred[0], "alice@a") || !strings.Contains(deferred[0], `"dataerased":true`) || !strings.Contains(deferred[1], "alice@b") {
		t.Errorf("deferred copies after forget: %q", deferred)
	}
	// The forgotten event.
	fe := drivertest.ReadStream(t, s, "a", erasure.ForgottenStream)
	if len(fe) != 1 || fe[0].Type != erasure.TypeSubjectForgotten || string(fe[0].Data) != `{"erasurekey":"alice"}` {
		t.Fatalf("%s stream: %+v", erasure.ForgottenStream, fe)
	}
	if _, err := s.StreamVersion(ctx, "b", erasure.ForgottenStream); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.StreamVersion(ctx, "b", erasure.ForgottenStream); v != 0 {
		t.Error("tenant b got a forgotten event")
	}
	// Again: nothing more.
	if again, err := erasure.For(s).Forget(ctx, "a", "alice"); err != nil || !again.Already {
		t.Errorf("forget again: %+v, %v; want Already", again, err)
	}
	if res, err := erasure.For(s).Forget(ctx, "a", "nobody"); err != nil || !res.Tombstone || res.Event.Type != erasure.TypeSubjectForgotten {
		t.Errorf("forget a subject without a key: %+v, %v; want a tombstone and the forgotten event", res, err)
	}
	if again, err := erasure.For(s).Forget(ctx, "a", "nobody"); err != nil || !again.Already {
		t.Errorf("forget a tombstoned subject again: %+v, %v; want Already", again, err)
	}
	var tie *envelope.InvalidError
	if _, err := s.Append(ctx, "a", "user-9", store.Any, drivertest.Personal(t, "nobody", "n@a")); !errors.As(err, &tie) || tie.Field != store.ExtErasureKey {
		t.Errorf("append under a tombstoned subject: %v, want an *InvalidError on erasurekey", err)
	}
	// New data under a forgotten subject is refused.
	var ie *envelope.InvalidError
	if _, err := s.Append(ctx, "a", "user-1", store.Any, drivertest.Personal(t, "alice", "again@a")); !errors.As(err, &ie) || ie.Field != store.ExtErasureKey {
		t.Errorf("append under a forgotten subject: %v, want an *InvalidError on erasurekey", err)
	}
}

func mustJSON(t testing.TB, e envelope.Event) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
