package store_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/drivertest"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestOwnStreamDeletedRepair: in a SQLite file where an older eventlite
// let a user hard-delete eventlite-forgotten, doctor reports it
// (own_stream_deleted) with the repair, and the next forget restores the
// stream instead of failing with ErrStreamDeleted.
func TestOwnStreamDeletedRepair(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	ownStreamDeletedRepair(t,
		func(opts *store.Options) *store.Store { return storetest.MustOpenPath(t, path, opts) },
		func(q string) {
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		})
}

// TestPostgresOwnStreamDeletedRepair: the same on PostgreSQL.
func TestPostgresOwnStreamDeletedRepair(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	u, _ := url.Parse(addr)
	schema := u.Query().Get("eventlite_schema")
	ownStreamDeletedRepair(t,
		func(opts *store.Options) *store.Store { return openAddr(t, addr, opts) },
		func(q string) {
			db, err := sql.Open("pgx", base)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`SET search_path TO "` + schema + `"; ` + q); err != nil {
				t.Fatal(err)
			}
		})
}

func ownStreamDeletedRepair(t *testing.T, open func(*store.Options) *store.Store, exec func(string)) {
	ctx := context.Background()
	opts := &store.Options{MasterKey: drivertest.MasterKey(t, 12)}
	s := open(opts)
	for _, who := range []string{"alice", "bob"} {
		if _, err := s.Append(ctx, "default", "user-"+who, store.Any, drivertest.Personal(t, who, who+"@x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	// What an older eventlite's `delete eventlite-forgotten --hard` left.
	exec(`UPDATE streams SET deleted = 2 WHERE stream_id = 'eventlite-forgotten'`)
	s = open(opts) // another process: it has cached nothing of the stream
	f, ok := drivertest.Problems(drivertest.Diagnose(t, s))["own_stream_deleted"]
	if !ok || len(f.IDs) != 1 || f.IDs[0] != "default/eventlite-forgotten (hard)" || !strings.Contains(f.Detail, "eventlite forget") {
		t.Fatalf("doctor on a file whose own stream was hard-deleted: %+v (found %v)", f, ok)
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "bob"); err != nil {
		t.Fatalf("forget in a tenant whose own stream was hard-deleted: %v", err)
	}
	if evs := drivertest.ReadStream(t, s, "default", "user-bob"); !envelope.Erased(evs[0]) {
		t.Error("bob's data still reads after the forget")
	}
	if _, ok := drivertest.Problems(drivertest.Diagnose(t, s))["own_stream_deleted"]; ok {
		t.Error("doctor still finds the own stream deleted after the forget restored it")
	}
	if _, err := s.Append(ctx, "default", erasure.ForgottenStream, store.Any, envelope.Event{Source: "/t", Type: "t"}); !errors.Is(err, store.ErrReservedStream) {
		t.Errorf("a user's append to the restored stream: %v", err)
	}
}

// TestDoctorMasterKeysMixed: a file whose data keys are wrapped by two
// master keys (an older eventlite allowed it) is a doctor problem that
// names both keys and says how to repair.
func TestDoctorMasterKeysMixed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	ctx := context.Background()
	s := storetest.MustOpenPath(t, path, &store.Options{MasterKey: drivertest.MasterKey(t, 16)})
	for _, who := range []string{"alice", "bob", "carol"} {
		if _, err := s.Append(ctx, "default", "user-"+who, store.Any, drivertest.Personal(t, who, who+"@x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := drivertest.Problems(drivertest.Diagnose(t, s))["master_keys_mixed"]; ok {
		t.Fatal("one master key reported as mixed")
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// What a second process with another master key left before the check.
	if _, err := db.Exec(`UPDATE erasure_keys SET master_key_id = X'0102030405060708' WHERE subject = 'bob'`); err != nil {
		t.Fatal(err)
	}
	other := storetest.MustOpenPath(t, path, nil)
	f, ok := drivertest.Problems(drivertest.Diagnose(t, other))["master_keys_mixed"]
	if !ok || len(f.IDs) != 2 || !strings.HasSuffix(f.IDs[0], "wraps 2 data keys") || f.IDs[1] != "0102030405060708 wraps 1 data keys" || !strings.Contains(f.Detail, "eventlite forget") {
		t.Fatalf("doctor on a file with two master keys: %+v (found %v)", f, ok)
	}
}
