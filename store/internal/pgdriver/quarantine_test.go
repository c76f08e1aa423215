package pgdriver

import (
	"context"
	"testing"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// TestQuarantineMarks walks an entry through the operators' marks: a
// repeat failure updates the open entry, a retry mark is taken by one
// conditional update only, a skip resolves, and a new failure after that
// opens a new entry.
func TestQuarantineMarks(t *testing.T) {
	ctx := context.Background()
	db := consumerTestDB(t)
	x := Exec{}
	if _, err := db.ExecContext(ctx, `INSERT INTO projections (name, status, updated_at) VALUES ('view', 'stopped', 1)`); err != nil {
		t.Fatal(err)
	}
	e := driver.QuarantineRow{Consumer: "view", Reason: "handler_error", Tenant: "default", Subject: "order-1", Version: 2, Position: 7,
		EventID: "e7", Event: []byte(`{"type":"t"}`), Error: "boom", Attempts: 1, Evidence: `{"n":1}`}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	one := func(rows []driver.QuarantineRow, err error) driver.QuarantineRow {
		t.Helper()
		must(err)
		if len(rows) != 1 {
			t.Fatalf("%d entries, want 1: %+v", len(rows), rows)
		}
		return rows[0]
	}

	for _, known := range []string{"view", "nobody"} {
		ok, err := x.QuarantineNameKnown(ctx, db, known)
		must(err)
		if ok != (known == "view") {
			t.Errorf("QuarantineNameKnown(%q) = %v", known, ok)
		}
	}
	must(x.Quarantine(ctx, db, e, 100))
	must(x.MarkQuarantineRetry(ctx, db, "view", "e7", 150))
	e.Error, e.Evidence = "boom again", `{"n":2}`
	must(x.Quarantine(ctx, db, e, 200))
	got := one(x.OpenQuarantineEntries(ctx, db, "view", "e7"))
	if got.ID == 0 || got.Attempts != 2 || got.Error != "boom again" || got.Evidence != `{"n":2}` || got.CreatedAt != 100 || got.LastFailedAt != 200 ||
		got.RetryRequestedAt != 0 || !got.Projection || got.ResolvedAt != 0 {
		t.Fatalf("after a repeat failure: %+v", got)
	}

	// A retry mark: a failed retry clears it, and only a marked entry
	// resolves.
	must(x.MarkQuarantineRetry(ctx, db, "view", "e7", 300))
	if r := one(x.QuarantineRetries(ctx, db, "view")); r.ID != got.ID || r.RetryRequestedAt != 300 {
		t.Fatalf("retries: %+v", r)
	}
	if ok, err := x.RetryFailed(ctx, db, got.ID, "still boom", 400); err != nil || !ok {
		t.Fatalf("RetryFailed: %v (%v)", ok, err)
	}
	if ok, err := x.ResolveRetry(ctx, db, got.ID, "retried", 450); err != nil || ok {
		t.Fatalf("ResolveRetry without a mark: %v (%v)", ok, err)
	}
	if r := one(x.QuarantineEntries(ctx, db, "", true)); r.Attempts != 3 || r.Error != "still boom" || r.LastFailedAt != 400 || r.RetryRequestedAt != 0 {
		t.Fatalf("after a failed retry: %+v", r)
	}
	must(x.MarkQuarantineRetry(ctx, db, "view", "e7", 500))
	if ok, err := x.ResolveRetry(ctx, db, got.ID, "retried", 600); err != nil || !ok {
		t.Fatalf("ResolveRetry: %v (%v)", ok, err)
	}
	if ok, err := x.RetryFailed(ctx, db, got.ID, "late", 650); err != nil || ok {
		t.Fatalf("RetryFailed on a resolved entry: %v (%v)", ok, err)
	}

	// The next failure of the event opens a new entry; a skip resolves it,
	// and so does an apply by event id or by position.
	must(x.Quarantine(ctx, db, e, 700))
	second := one(x.QuarantineEntries(ctx, db, "view", true))
	if second.ID == got.ID || second.Attempts != 1 {
		t.Fatalf("new entry: %+v", second)
	}
	status, err := x.QuarantinedProjectionStatus(ctx, db, "view")
	if err != nil || status != "stopped" {
		t.Fatalf("status %q (%v)", status, err)
	}
	if status, err := x.QuarantinedProjectionStatus(ctx, db, "nobody"); err != nil || status != "" {
		t.Fatalf("status of an unknown projection %q (%v)", status, err)
	}
	must(x.SkipQuarantine(ctx, db, "view", "e7", 800))
	must(x.Quarantine(ctx, db, e, 900))
	must(x.ResolveQuarantine(ctx, db, "view", 0, "e7", 1000))
	must(x.Quarantine(ctx, db, e, 1100))
	must(x.ResolveQuarantine(ctx, db, "view", 7, "", 1200))
	all, err := x.QuarantineEntries(ctx, db, "view", false)
	must(err)
	var resolutions []string
	for _, r := range all {
		if r.ResolvedAt == 0 {
			t.Errorf("entry %d still open", r.ID)
		}
		resolutions = append(resolutions, r.Resolution)
	}
	if len(resolutions) != 4 || resolutions[0] != "retried" || resolutions[1] != "skipped" || resolutions[2] != "applied" || resolutions[3] != "applied" {
		t.Errorf("resolutions %v", resolutions)
	}
	if st, err := x.ConsumerStats(ctx, db, "view"); err != nil || st.Quarantined != 0 {
		t.Errorf("open quarantine count %d (%v)", st.Quarantined, err)
	}
}
