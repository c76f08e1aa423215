package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
)

func doctorJSON(t *testing.T, args ...string) (doctorReport, result) {
	t.Helper()
	r := run(t, "", append([]string{"doctor", "--json"}, args...)...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json printed %q: %v (stderr %s)", r.stdout, err, r.stderr)
	}
	if strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Errorf("doctor --json prints one object on one line, got %q", r.stdout)
	}
	return rep, r
}

func TestDoctorHealthyAndInfo(t *testing.T) {
	db := newDB(t)
	mustRun(t, "", "append", "order-1", "--type", "t", "--db", db)
	rep, r := doctorJSON(t, "--db", db)
	if r.code != exitOK || !rep.Healthy {
		t.Fatalf("a fresh dev store: exit %d, %+v", r.code, rep)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != "outbox_pending" || rep.Findings[0].Severity != "info" || rep.Findings[0].Count != 1 {
		t.Errorf("findings %+v", rep.Findings)
	}
	// Every field of the contract is present.
	var raw map[string]any
	_ = json.Unmarshal([]byte(r.stdout), &raw)
	f := raw["findings"].([]any)[0].(map[string]any)
	for _, k := range []string{"kind", "severity", "count", "oldest_age_seconds", "ids"} {
		if _, ok := f[k]; !ok {
			t.Errorf("finding lacks %q: %v", k, f)
		}
	}
	h := mustRun(t, "", "doctor", "--db", db)
	if !strings.Contains(h.stdout, "outbox_pending") || !strings.Contains(h.stdout, "healthy") {
		t.Errorf("human output:\n%s", h.stdout)
	}
}

func TestDoctorProblemsExit6(t *testing.T) {
	db := newDB(t)
	mustRun(t, "", "append", "order-1", "--type", "t", "--db", db)
	ctx := context.Background()
	s, err := store.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := effect.For(s).Run(ctx, "default", "charge:9", func(context.Context) (string, error) { return "", effect.ErrOutcomeUnknown }); err == nil {
		t.Fatal("want the unknown outcome back")
	}
	s.Close()
	rep, r := doctorJSON(t, "--db", db)
	if r.code != exitIncomplete || rep.Healthy {
		t.Fatalf("exit %d, %+v", r.code, rep)
	}
	found := false
	for _, f := range rep.Findings {
		if f.Kind == "effects_unknown" && f.Severity == "problem" && f.Count == 1 && f.IDs[0] == "default:charge:9" {
			found = true
		}
	}
	if !found {
		t.Errorf("the unknown effect is not reported: %+v", rep.Findings)
	}
	if r := run(t, "", "doctor", "--db", db, "--outbox-age", "-5s"); r.code != exitUsage {
		t.Errorf("a negative bound: exit %d", r.code)
	}
	if r := run(t, "", "doctor", "--db", newDB(t)); r.code != exitNotFound {
		t.Errorf("no database: exit %d", r.code)
	}
}

func TestDoctorDeepFindsDrift(t *testing.T) {
	db := newDB(t)
	for _, s := range []string{"a", "b", "c"} {
		mustRun(t, "", "append", s, "--type", "t", "--db", db)
	}
	mustRun(t, "", "catalog", "--db", db) // builds the catalog on demand
	if rep, r := doctorJSON(t, "--db", db, "--deep"); r.code != exitOK || !rep.Healthy {
		t.Fatalf("clean catalog: exit %d %+v (stderr %s)", r.code, rep, r.stderr)
	}
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE catalog SET version = 99 WHERE stream = 'b'`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	rep, r := doctorJSON(t, "--db", db, "--deep")
	if r.code != exitIncomplete || rep.Healthy {
		t.Fatalf("tampered catalog: exit %d %+v", r.code, rep)
	}
	if len(rep.Findings) == 0 || rep.Findings[len(rep.Findings)-1].Kind != "projection_drift" {
		t.Errorf("findings %+v", rep.Findings)
	}
}
