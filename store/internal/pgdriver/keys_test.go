package pgdriver

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
)

func TestEraseCopy(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		ok             bool
	}{
		{"data removed, members kept in order", `{"id":"1","data":{"a":"x\u0000y"},"erasurekey":"alice","type":"t"}`,
			`{"id":"1","erasurekey":"alice","type":"t","dataerased":true}`, true},
		{"base64 data removed, mark replaced in place", `{"data_base64":"AAE=","dataerased":false, "erasurekey" : "alice","x":"<&>"}`,
			`{"dataerased":true,"erasurekey":"alice","x":"<&>"}`, true},
		{"another subject", `{"data":1,"erasurekey":"bob"}`, "", false},
		{"no erasure key", `{"data":1}`, "", false},
		{"a key that is not a string", `{"data":1,"erasurekey":1}`, "", false},
		{"not an object", `["alice"]`, "", false},
		{"not JSON", `{"erasurekey":"alice",`, "", false},
	} {
		got, ok := eraseCopy([]byte(c.in), "alice")
		if ok != c.ok || string(got) != c.want {
			t.Errorf("%s: eraseCopy(%s) = %s, %v; want %s, %v", c.name, c.in, got, ok, c.want, c.ok)
		}
	}
}

// openKeysSchema returns a connection to a fresh, migrated schema.
func openKeysSchema(t *testing.T) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	db, err := Driver{}.OpenWriter(driver.OpenConfig{Path: withSchema(t, freshSchema(t)), BusyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if _, err := (Driver{}).ApplyMigration(ctx, c, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestForgetOnPostgres: the forget's steps the suite does not reach, on
// the server: a second forget finds the key forgotten, the subject's
// streams and copies are found (a copy whose data holds an escaped NUL
// too, another tenant's and another subject's are left alone), and the
// scrub removes only the forgotten subject's ciphertext.
func TestForgetOnPostgres(t *testing.T) {
	ctx := context.Background()
	c := openKeysSchema(t)
	x := Exec{}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, s := range []string{"alice", "bob"} {
		if err := x.InsertDataKey(ctx, c, "default", s, []byte("m"), []byte("w-"+s), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.InsertDataKey(ctx, c, "default", "alice", []byte("m"), []byte("other"), 2); err != nil {
		t.Fatal(err)
	}
	if k, ok, err := x.DataKey(ctx, c, "default", "alice"); err != nil || !ok || string(k.Wrapped) != "w-alice" || k.Forgotten {
		t.Fatalf("data key: %+v %v %v; want the first one stored", k, ok, err)
	}
	exec(`INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time, content_type, data, extensions, recorded_at) VALUES
		(1, 'default', 'u-1', 1, 'e1', 't', 's', 1, 'application/json', 'c1', '{"erasurekey":"alice"}', 1),
		(2, 'default', 'u-2', 1, 'e2', 't', 's', 1, 'application/json', 'c2', '{"erasurekey":"bob"}', 1),
		(3, 'default', 'u-3', 1, 'e3', 't', 's', 1, 'application/json', 'c3', '{"x":"alice","erasurekey":"alice"}', 1),
		(4, 'other', 'u-1', 1, 'e4', 't', 's', 1, 'application/json', 'c4', '{"erasurekey":"alice"}', 1),
		(5, 'default', 'u-4', 1, 'e5', 't', 's', 1, 'application/json', 'c5', NULL, 1)`)
	alice := []byte(`{"id":"1","data":{"a":"x\u0000y"},"erasurekey":"alice"}`)
	exec(`INSERT INTO quarantine (consumer, reason, tenant, event_id, event, created_at) VALUES
		('c', 'r', 'default', '1', $1, 1), ('c', 'r', 'default', '2', '{"data":1,"erasurekey":"bob"}', 1),
		('c', 'r', 'default', '3', 'not json', 1), ('c', 'r', 'other', '1', $1, 1)`, alice)
	exec(`INSERT INTO deferred (consumer, tenant, subject, version, event_id, event, expected, first_seen, reason)
		VALUES ('c', 'default', 's', 1, 'e', $1, 1, 1, 'r')`, alice)
	exec(`INSERT INTO version_conflicts (consumer, tenant, subject, version, kept_event_id, conflicting_id, conflicting_event, created_at)
		VALUES ('c', 'default', 's', 1, 'a', 'b', $1, 1)`, alice)

	if found, already, err := x.ForgetDataKey(ctx, c, "default", "alice", 7); err != nil || !found || already {
		t.Fatalf("forget: found %v already %v %v", found, already, err)
	}
	if found, already, err := x.ForgetDataKey(ctx, c, "default", "alice", 8); err != nil || !found || !already {
		t.Fatalf("second forget: found %v already %v %v", found, already, err)
	}
	if found, _, err := x.ForgetDataKey(ctx, c, "default", "carol", 8); err != nil || found {
		t.Fatalf("forget without a key: found %v %v", found, err)
	}
	if k, ok, err := x.DataKey(ctx, c, "default", "alice"); err != nil || !ok || k.Wrapped != nil || k.MasterKeyID != nil || !k.Forgotten {
		t.Fatalf("forgotten key: %+v %v %v", k, ok, err)
	}
	// carol had no key: her forget at 8 kept a tombstone, the newest forget.
	if newest, err := x.NewestForget(ctx, c); err != nil || newest != 8 {
		t.Fatalf("newest forget %d %v, want 8 (carol's tombstone)", newest, err)
	}
	if live, err := x.AnyLiveKey(ctx, c); err != nil || !live {
		t.Fatalf("any live key: %v %v (bob's lives)", live, err)
	}
	streams, err := x.SubjectStreams(ctx, c, "default", "alice")
	slices.Sort(streams)
	if err != nil || !slices.Equal(streams, []string{"u-1", "u-3"}) {
		t.Fatalf("subject streams %v %v", streams, err)
	}
	var n int64
	for _, kind := range driver.EventCopyKinds {
		k, err := x.EraseCopies(ctx, c, kind, "default", "alice")
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		n += k
	}
	if n != 3 {
		t.Errorf("copies erased: %d, want 3", n)
	}
	var got []string
	rows, err := c.QueryContext(ctx, `SELECT tenant || ' ' || convert_from(event, 'UTF8') FROM quarantine ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	rows.Close()
	want := []string{`default {"id":"1","erasurekey":"alice","dataerased":true}`, `default {"data":1,"erasurekey":"bob"}`,
		`default not json`, `other {"id":"1","data":{"a":"x\u0000y"},"erasurekey":"alice"}`}
	if !slices.Equal(got, want) {
		t.Errorf("quarantine copies:\n%q\nwant\n%q", got, want)
	}
	if n, err := x.ScrubErased(ctx, c); err != nil || n != 2 {
		t.Fatalf("scrub: %d %v, want alice's 2 events of tenant default", n, err)
	}
	var kept string
	if err := c.QueryRowContext(ctx, `SELECT string_agg(event_id, ',' ORDER BY position) FROM events WHERE data IS NOT NULL`).Scan(&kept); err != nil || kept != "e2,e4,e5" {
		t.Fatalf("events with data: %q %v", kept, err)
	}
}
