package publish_test

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
)

// TestRelayDeadLettersForeignKeyEvent: in a file an older eventlite let
// a second master key into, the relay (with the store's key) dead-letters
// only the event whose data key the other master key wraps, saying so,
// and publishes every other event (today it stopped, publishing none).
func TestRelayDeadLettersForeignKeyEvent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	s := openAt(t, path, &store.Options{MasterKey: masterKey(7)})
	for _, who := range []string{"alice", "bob"} {
		e := newEvent(t, "user.registered", map[string]any{"email": who + "@example.org"}).WithErasureKey(who)
		if _, err := s.Append(ctx, "default", "user-"+who, store.Any, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, "default", "plain", store.Any, newEvent(t, "test.happened", map[string]any{"n": 1})); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// bob's key as a second master key left it (its id is another's).
	if _, err := raw.Exec(`UPDATE erasure_keys SET master_key_id = X'0102030405060708' WHERE subject = 'bob'`); err != nil {
		t.Fatal(err)
	}
	relayStore := openAt(t, path, &store.Options{MasterKey: masterKey(7)})
	var out bytes.Buffer
	r := newRelay(t, publish.Options{Store: relayStore, Publisher: publish.NewStdout(&out), Once: true})
	_ = r.Run(ctx) // a dead letter is left: it says so
	published := out.String()
	if strings.Count(published, "\n") != 2 || !strings.Contains(published, "alice@example.org") || strings.Contains(published, "user-bob") {
		t.Errorf("published:\n%s\nwant alice's and the plain event, not bob's", published)
	}
	var dead []outbox.Entry
	for _, e := range outboxEntries(t, relayStore) {
		if !e.DeadAt.IsZero() {
			dead = append(dead, e)
		}
	}
	if len(dead) != 1 || dead[0].Stream != "user-bob" || !strings.Contains(dead[0].LastError, "0102030405060708") || !strings.Contains(dead[0].LastError, "forget") {
		t.Errorf("dead letters %+v, want bob's event naming the other master key and what to do", dead)
	}
}
