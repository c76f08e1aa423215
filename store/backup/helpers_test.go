package backup_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/eventlite/eventlite/store/internal/testfix"
	_ "github.com/eventlite/eventlite/store/postgres"
)

// The file probes and fixtures store's tests share
// (store/internal/testfix).
var (
	fillStore      = testfix.FillStore
	readLog        = testfix.ReadLog
	rawQueryString = testfix.RawQueryString
	holds          = testfix.Holds
	tagMatches     = testfix.TagMatches
)

type logEvent = testfix.LogEvent

// envDB names the database file a helper child works on.
const envDB = "EVENTLITE_DB"

// helperFail ends a helper child with a message on stderr.
func helperFail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "helper %s: %s\n", os.Getenv(envBackupHelper), fmt.Sprintf(format, args...))
	os.Exit(3)
}

// walCheckpoint moves the WAL of the database at path into the file and
// truncates it, from a connection of its own, and fails unless it did.
func walCheckpoint(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var busy, frames, done int64
	if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil || busy != 0 {
		t.Fatalf("checkpoint %s: busy %d, %v", path, busy, err)
	}
}
