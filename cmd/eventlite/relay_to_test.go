package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
)

// A malformed destination, of any scheme, is a usage error found before
// the database is opened: exit 2, and no file is created (a relay that
// runs until interrupted creates the database otherwise).
func TestRelayToIsCheckedBeforeTheDatabase(t *testing.T) {
	t.Parallel()
	for _, to := range []string{
		"http://", "http://:8080/events", "https://sink:99999/", "http://sink:port/", "http://exa mple.com/", "https://[::1/x",
		"nats://", "nats://:4222", "nats://h:70000", "nats://h:1?subject=a..b", "nats://h:1?subject=x.{tenant}{type}",
		"nats://h:1?subject=x.{nope}", "nats://h:1?stream=a.b",
		"stdout2", "ftp://h/",
	} {
		db := newDB(t)
		// A destination that slipped through would start a relay: bound it.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		r := runWith(t, ctx, nil, "", "relay", "--to", to, "--db", db)
		cancel()
		if r.code != exitUsage || !strings.Contains(r.stderr, "Usage: eventlite relay") {
			t.Errorf("--to %q: exit %d, want %d; stderr:\n%s", to, r.code, exitUsage, r.stderr)
		}
		if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("--to %q created the database (stat: %v)", to, err)
		}
	}
}
