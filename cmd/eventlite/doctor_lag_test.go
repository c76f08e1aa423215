package main

import (
	"strings"
	"testing"
)

// TestDoctorDeepLagAfterRetention: after a scavenge that applied a
// retention trim, the on-demand catalog lags behind the trim's
// truncated event and the removal; doctor --deep reports that as lag
// (information, exit 0), not as drift. Caught up, it reports nothing.
func TestDoctorDeepLagAfterRetention(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for range 5 {
		mustRun(t, "", "append", "s", "--type", "t", "--db", db)
	}
	mustRun(t, "", "append", "other", "--type", "t", "--db", db)
	mustRun(t, "", "catalog", "--db", db)                           // builds the catalog on demand
	mustRun(t, "", "relay", "--to", "stdout", "--once", "--db", db) // a scavenge never removes an unpublished event
	mustRun(t, "", "retention", "set", "s", "--max-count", "2", "--db", db)
	if r := mustRun(t, "", "scavenge", "--json", "--db", db); !strings.Contains(r.stdout, `"removed":3`) {
		t.Fatalf("scavenge: %s", r.stdout)
	}
	rep, r := doctorJSON(t, "--db", db, "--deep")
	if r.code != exitOK || !rep.Healthy {
		t.Fatalf("a catalog that only lags: exit %d %+v (stderr %s)", r.code, rep, r.stderr)
	}
	lag := false
	for _, f := range rep.Findings {
		if f.Kind == "projection_drift" {
			t.Errorf("a catalog that only lags reported as drift: %+v", f)
		}
		lag = lag || f.Kind == "projection_lag_deep"
	}
	if !lag {
		t.Errorf("findings %+v, want the catalog's lag", rep.Findings)
	}
	mustRun(t, "", "catalog", "--db", db) // catches up
	if rep, r := doctorJSON(t, "--db", db, "--deep"); r.code != exitOK || !rep.Healthy || hasKind(rep, "projection_lag_deep") {
		t.Fatalf("the caught-up catalog: exit %d %+v", r.code, rep)
	}
}

func hasKind(rep doctorReport, kind string) bool {
	for _, f := range rep.Findings {
		if f.Kind == kind {
			return true
		}
	}
	return false
}
