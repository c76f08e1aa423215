//go:build unix

package store_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestPostgresIdleHolderStopped: a process stopped (SIGSTOP) inside an
// Update, holding the head row, does not stall another writer past
// idle_in_transaction_session_timeout (2s here, through the holder's
// address): the server ends the holder's session, the writer waiting
// behind it goes on, and the stopped process's append is never stored.
func TestPostgresIdleHolderStopped(t *testing.T) {
	base := storetest.PostgresBase(t)
	addr := storetest.PostgresSchema(t, base)
	s := openAddr(t, addr, &store.Options{BusyTimeout: 2 * time.Minute})
	db := pgSQL(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := s.Append(ctx, "t", "first", store.NoStream, pgEvent("first")); err != nil {
		t.Fatal(err)
	}
	holder := startPGChild(t, "hold", withParam(t, addr, "idle_in_transaction_session_timeout", "2000"))
	if err := holder.goAhead(); err != nil {
		t.Fatal(err)
	}
	line, _ := holder.next()
	pidText, ok := strings.CutPrefix(line, "HOLDING ")
	if !ok {
		t.Fatalf("the holder said %q, not HOLDING: %s", line, holder.errb.String())
	}
	backend, err := strconv.Atoi(pidText)
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.cmd.Process.Signal(syscall.SIGCONT) }()
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, "t", "behind", store.NoStream, pgEvent("behind"))
		done <- err
	}()
	query, blocked, finished, err := awaitWaiter(t, ctx, db, backend, done)
	if finished {
		t.Fatalf("the append did not wait for the stopped holder: %v", err)
	}
	if !blocked || !strings.Contains(query, "log_head") {
		t.Fatalf("the append waited in %q, not on the head row", query)
	}
	if err := <-done; err != nil {
		t.Fatalf("the append behind a stopped holder: %v", err)
	}
	got, err := pgReadLog(ctx, s, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []seenEvent{{1, "first"}, {2, "behind"}}; !slices.Equal(got, want) {
		t.Errorf("log %v, want %v: the stopped holder's event is never stored", got, want)
	}
}
