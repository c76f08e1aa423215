package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// planAccess decides how a process may open another user's file without
// leaving -wal and -shm files the owner cannot write. The cross-user test
// in cmd/eventlite runs it for real when the tests run as root.
func TestPlanAccess(t *testing.T) {
	t.Parallel()
	const owner, reader, shared, other = 1000, 2000, 500, 2000
	me := ids{uid: reader, gid: other}
	inShared := ids{uid: reader, gid: other, groups: []int{shared}}
	db := func(gid int, mode fs.FileMode) fileStat { return fileStat{uid: owner, gid: gid, mode: mode} }
	dir := func(gid int, mode fs.FileMode) fileStat { return fileStat{uid: 0, gid: gid, mode: mode} }
	tests := []struct {
		name     string
		u        ids
		db, dir  fileStat
		wal, shm bool
		readOnly bool
		want     accessPlan
		why      string
	}{
		{"the owner", ids{uid: owner, gid: shared}, db(shared, 0o600), dir(0, 0o755), false, false, true, planOwner, ""},
		{"root (SQLite hands what it creates to the owner)", ids{uid: 0}, db(shared, 0o600), dir(0, 0o755), false, false, false, planOwner, ""},
		{"at rest in a world-writable dir", me, db(shared, 0o644), dir(0, 0o1777), false, false, true, planRefuse, "files owned by the reader, 0644"},
		{"at rest in a read-only dir", me, db(shared, 0o644), dir(0, 0o755), false, false, true, planRefuse, "SQLite cannot read WAL without creating -wal"},
		{"open by the owner's process", me, db(shared, 0o644), dir(0, 0o1777), true, true, true, planAttach, "mode=ro uses the existing files"},
		{"open by the owner's process, but a write open", me, db(shared, 0o644), dir(0, 0o1777), true, true, false, planRefuse, "writes would fail on the owner's files"},
		{"only -wal left", me, db(shared, 0o644), dir(0, 0o1777), true, false, true, planRefuse, "SQLite would create -shm"},
		{"a shared group, setgid dir", inShared, db(shared, 0o664), dir(shared, 0o2775|fs.ModeSetgid), false, false, true, planShared, ""},
		{"a shared group, setgid dir, write open", inShared, db(shared, 0o664), dir(shared, 0o2775|fs.ModeSetgid), false, false, false, planShared, ""},
		{"a shared group without setgid: new files get the reader's group", inShared, db(shared, 0o664), dir(shared, 0o775), false, false, true, planRefuse, ""},
		{"the reader's primary group is the file's", ids{uid: reader, gid: shared}, db(shared, 0o664), dir(shared, 0o775), false, false, true, planShared, ""},
		{"a shared group, file not group-writable", inShared, db(shared, 0o644), dir(shared, 0o2775|fs.ModeSetgid), false, false, true, planRefuse, ""},
		{"a shared group, dir not writable", inShared, db(shared, 0o664), dir(shared, 0o2755|fs.ModeSetgid), false, false, true, planRefuse, ""},
		{"not in the file's group", me, db(shared, 0o664), dir(shared, 0o2777|fs.ModeSetgid), false, false, true, planRefuse, "cannot write the db: cannot clean up"},
		{"world-writable file", me, db(shared, 0o666), dir(0, 0o1777), false, false, true, planShared, ""},
	}
	for _, tt := range tests {
		if got := planAccess(tt.u, tt.db, tt.dir, tt.wal, tt.shm, tt.readOnly); got != tt.want {
			t.Errorf("%s: plan %d, want %d (%s)", tt.name, got, tt.want, tt.why)
		}
	}
}

// checkAccess returns a *SharingError for another user's file at rest in
// a world-writable directory; the owner and root open as usual.
func TestCheckAccess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.db")
	if p, err := checkAccess(path, true); p != planOwner || err != nil {
		t.Errorf("a missing file: plan %d, %v", p, err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := checkAccess(path, true); p != planOwner || err != nil {
		t.Errorf("my own file: plan %d, %v", p, err)
	}
	e := &SharingError{Path: path, Owner: 1000, User: 2000}
	if !errors.Is(e, ErrNotOwner) {
		t.Error("SharingError does not match ErrNotOwner")
	}
	t.Log(e)
}

// makeOldSchema writes an eventlite database of schema version v (< the
// current one), as an older eventlite left it: WAL, migrations 1..v.
func makeOldSchema(t *testing.T, path string, v int) {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	stmts := []string{"PRAGMA journal_mode=WAL"}
	for _, m := range ms[:v] {
		stmts = append(stmts, m.SQL)
	}
	stmts = append(stmts, fmt.Sprintf("PRAGMA user_version=%d", v))
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// A read-only open of an older schema is refused with ErrSchemaTooOld and
// changes nothing; Migrate upgrades it, and reports from what.
func TestReadOnlyOlderSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := SchemaVersion() - 1
	path := filepath.Join(t.TempDir(), "old.db")
	makeOldSchema(t, path, old)
	sum := func() [32]byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	before := sum()
	_, err := Open(ctx, path, &Options{ReadOnly: true})
	if !errors.Is(err, ErrSchemaTooOld) {
		t.Fatalf("read-only Open of schema %d: %v, want ErrSchemaTooOld", old, err)
	}
	t.Log(err)
	if sum() != before {
		t.Error("a refused read-only open changed the file")
	}
	for _, f := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + f); err == nil {
			t.Errorf("a refused read-only open left %s", f)
		}
	}
	res, err := Migrate(ctx, path, nil)
	if err != nil || res.From != old || res.To != SchemaVersion() {
		t.Fatalf("Migrate: %+v, %v", res, err)
	}
	if res, err := Migrate(ctx, path, nil); err != nil || res.From != SchemaVersion() {
		t.Fatalf("Migrate again: %+v, %v", res, err)
	}
	s, err := Open(ctx, path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open after Migrate: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
