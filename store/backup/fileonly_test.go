package backup_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
)

// TestFileOnlyRefusesPostgres: the functions that work on a database file
// refuse a PostgreSQL address with ErrFileOnly, before touching a file or
// a server, and never show its password.
func TestFileOnlyRefusesPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const secret = "s3cret-pw"
	dir := t.TempDir()
	file := filepath.Join(dir, "events.db")
	for _, addr := range []string{
		"postgres://app:" + secret + "@127.0.0.1:1/db?sslmode=disable",
		"POSTGRESQL://app:" + secret + "@127.0.0.1:1/db?eventlite_schema=orders",
	} {
		calls := map[string]func() error{
			"backup from": func() error { _, err := backup.Create(ctx, addr, file, nil); return err },
			"backup to":   func() error { _, err := backup.Create(ctx, file, addr, nil); return err },
			"restore from": func() error {
				_, err := backup.Restore(ctx, addr, file, nil)
				return err
			},
			"restore to": func() error { _, err := backup.Restore(ctx, file, addr, nil); return err },
			"inspect":    func() error { _, err := backup.Inspect(ctx, addr); return err },
		}
		for name, call := range calls {
			err := call()
			var fe *backup.FileOnlyError
			if !errors.Is(err, backup.ErrFileOnly) || !errors.As(err, &fe) {
				t.Errorf("%s %s: got %v, want a *FileOnlyError", name, addr[:10], err)
				continue
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows the password: %v", name, err)
			}
			if !strings.Contains(err.Error(), "not supported on PostgreSQL") {
				t.Errorf("%s: %v does not say it is not supported on PostgreSQL", name, err)
			}
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the refusals left files behind: %v", ents)
	}
	if !store.IsPostgresAddress("PostgreSQL://h/db") || store.IsPostgresAddress("postgres.db") {
		t.Error("IsPostgresAddress: wrong answer")
	}
}
