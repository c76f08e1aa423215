package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// helperEnv selects what a re-executed test binary does (TestHelperProcess).
const helperEnv = "EVENTLITE_PGDRIVER_HELPER"

// TestMigrateConcurrent runs Migrate on one fresh schema from 4 processes
// and 4 goroutines with pools of their own, all at once: every call
// succeeds and the schema ends at the binary's version with one head row.
// Without the advisory lock the CREATEs race (duplicate key in the catalog)
// and the head row is inserted twice.
func TestMigrateConcurrent(t *testing.T) {
	schema := freshSchema(t)
	addr := withSchema(t, schema)
	ctx := context.Background()
	const procs, goroutines = 4, 4
	var wg sync.WaitGroup
	errs := make(chan error, procs+goroutines)
	start := make(chan struct{})
	for i := range procs {
		wg.Go(func() {
			<-start
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
			cmd.Env = append(os.Environ(), helperEnv+"=migrate", "EVENTLITE_PGDRIVER_ADDR="+addr)
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("process %d: %v\n%s", i, err, out)
			}
		})
	}
	dbs := make([]*DB, goroutines)
	for i := range dbs {
		dbs[i] = openSchema(t, schema, nil)
	}
	for _, db := range dbs {
		wg.Go(func() {
			<-start
			if err := db.Migrate(ctx); err != nil {
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var version, heads int
	if err := dbs[0].Pool().QueryRow(ctx, "SELECT (SELECT max(version) FROM "+dbs[0].quoted+".schema_migrations), (SELECT count(*) FROM "+dbs[0].quoted+".log_head)").Scan(&version, &heads); err != nil {
		t.Fatal(err)
	}
	if version != SchemaVersion() || heads != 1 {
		t.Errorf("schema version %d, head rows %d; want %d and 1", version, heads, SchemaVersion())
	}
	var rows int
	if err := dbs[0].Pool().QueryRow(ctx, "SELECT count(*) FROM "+dbs[0].quoted+".schema_migrations").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != SchemaVersion() {
		t.Errorf("%d schema_migrations rows, want %d (one per migration)", rows, SchemaVersion())
	}
}

// TestMigrateRefusesNewerSchema: a schema recorded at a version this binary
// does not know is refused with *SchemaTooNewError, and left as it was.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	db := openTest(t, nil)
	ctx := context.Background()
	newer := SchemaVersion() + 1
	if _, err := db.Pool().Exec(ctx, "INSERT INTO "+db.quoted+".schema_migrations (version, name, applied_at) VALUES ($1, 'from_the_future.sql', 0)", newer); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, "t", "s", NoStream, []Event{ev("a")}); err != nil {
		t.Fatal(err)
	}
	err := db.Migrate(ctx)
	var tn *SchemaTooNewError
	if !errors.As(err, &tn) || tn.Version != newer || tn.Known != SchemaVersion() || tn.Schema != db.Schema() {
		t.Fatalf("Migrate on a newer schema: %v, want a *SchemaTooNewError{%s %d %d}", err, db.Schema(), newer, SchemaVersion())
	}
	if !strings.Contains(err.Error(), "upgrade eventlite") {
		t.Errorf("the error does not say what to do: %v", err)
	}
	recs, err := db.ReadAfter(ctx, 0, 10)
	if err != nil || len(recs) != 1 {
		t.Errorf("after the refusal: %d events, %v; want the 1 appended", len(recs), err)
	}
}

// TestSchemaParam: the eventlite_schema parameter names the schema the
// tables go to, and pgx never sees it (the server would refuse it as an
// unknown run-time parameter, and the connection would fail).
func TestSchemaParam(t *testing.T) {
	schema := freshSchema(t)
	db := openSchema(t, schema, nil)
	ctx := context.Background()
	if db.Schema() != schema {
		t.Fatalf("Schema() = %q, want %q", db.Schema(), schema)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var tables []string
	rows, err := db.Pool().Query(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1", schema)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(tables, ","), "events,log_head,schema_migrations,streams"; got != want {
		t.Errorf("tables in %s: %s, want %s", schema, got, want)
	}
	if cfg := db.Pool().Config().ConnConfig; cfg.RuntimeParams[SchemaParam] != "" || strings.Contains(cfg.ConnString(), SchemaParam) {
		t.Errorf("pgx was given %s: %v", SchemaParam, cfg.RuntimeParams)
	}
	// Options.Schema, with no parameter, works the same.
	other := freshSchema(t)
	db2, err := Open(ctx, testURL(t), &Options{Schema: other})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if err := db2.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db2.Pool().QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", other).Scan(&n); err != nil || n != 4 {
		t.Errorf("Options.Schema %s: %d tables, %v; want 4", other, n, err)
	}
}

// TestHelperProcess is not a test: the tests re-execute the test binary to
// run it as another process (see helperEnv).
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process: run by other tests only")
	}
	ctx := context.Background()
	addr := os.Getenv("EVENTLITE_PGDRIVER_ADDR")
	switch mode {
	case "migrate":
		db, err := Open(ctx, addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	case "append":
		helperAppend(t, addr)
	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
}
