package main

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/store/storetest"
)

// TestPostgresFollowAfterSessionsEnded: when the server ends the store's
// sessions (pg_terminate_backend stands for a restart or an operator's
// kill), a tail --follow stopped by SIGTERM still exits 0: a session that
// already ended is not an error at close.
func TestPostgresFollowAfterSessionsEnded(t *testing.T) {
	t.Parallel()
	db, schema := postgresDB(t)
	mustRun(t, events(1), "--db", db, "append", "s")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan result, 1)
	go func() {
		var stderr strings.Builder
		m := &Main{Stdout: pw, Stderr: &stderr}
		code := m.Run(ctx, []string{"tail", "--follow", "--db", db})
		pw.Close()
		done <- result{code: code, stderr: stderr.String()}
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() { // the first event: the follower has the store open
		t.Fatalf("tail --follow ended before printing: %v", sc.Err())
	}
	go io.Copy(io.Discard, pr)

	admin, err := sql.Open("pgx", storetest.PostgresBase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var ended int
	if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name LIKE 'eventlite % ' || $1`, schema).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended == 0 {
		t.Fatalf("ended no session of schema %s", schema)
	}
	cancel() // SIGTERM
	r := <-done
	if r.code != exitOK {
		t.Errorf("tail --follow after %d sessions ended: exit %d, want %d; stderr:\n%s", ended, r.code, exitOK, r.stderr)
	}
}
