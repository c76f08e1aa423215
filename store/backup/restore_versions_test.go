package backup_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/storetest"
)

// appendN appends n events to tenant/stream whatever its version.
func appendN(t *testing.T, s *store.Store, tenant, stream string, n int) store.AppendResult {
	t.Helper()
	evs := make([]envelope.Event, n)
	for i := range evs {
		evs[i] = envelope.Event{Source: "/test/restore", Type: "order.noted", Data: fmt.Appendf(nil, `{"i":%d}`, i)}
	}
	res, err := s.Append(context.Background(), tenant, stream, store.Any, evs...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// streamVersions reads a stream's versions and types.
func streamVersions(t *testing.T, s *store.Store, tenant, stream string) []string {
	t.Helper()
	var out []string
	for e, err := range s.ReadStream(context.Background(), tenant, stream, store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s", e.StreamVersion, e.Type))
	}
	return out
}

// TestRestoreHandsNoVersionOutTwice restores an older backup over a
// store, open in this process, whose streams had gone further: the next
// appends get versions above every version the streams ever had (the
// store's cached stream state is not trusted across the restore), an
// expected-version check sees the restored event's version, and the
// skipped versions are a gap the invariants and doctor accept.
func TestRestoreHandsNoVersionOutTwice(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	s := storetest.MustOpenPath(t, path, nil)
	appendN(t, s, "t1", "order-1", 10)
	appendN(t, s, "t1", "order-2", 3)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	// After the backup: order-1 goes to 15, order-3 is new (4), order-2
	// stays. These are the events the restore loses.
	appendN(t, s, "t1", "order-1", 5)
	appendN(t, s, "t1", "order-3", 4)
	res, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []backup.RolledBackStream{{Tenant: "t1", Stream: "order-1", Kept: 10, Had: 15}, {Tenant: "t1", Stream: "order-3", Kept: 0, Had: 4}}
	if diff := cmp.Diff(want, res.RolledBack); diff != "" {
		t.Fatalf("streams taken back (-want +got):\n%s", diff)
	}
	// order-1's version is the restored event's, 16: Exact(15) is a
	// conflict that names it, Exact(16) appends version 17.
	ev := envelope.Event{Source: "/test/restore", Type: "order.noted", Data: []byte(`{}`)}
	_, err = s.Append(ctx, "t1", "order-1", store.Exact(15), ev)
	var conflict *store.ConflictError
	if !errors.As(err, &conflict) || conflict.Actual != 16 {
		t.Fatalf("append at Exact(15) after the restore: %v, want a conflict at version 16", err)
	}
	r, err := s.Append(ctx, "t1", "order-1", store.Exact(16), ev)
	if err != nil || r.Version != 17 {
		t.Fatalf("append at Exact(16): version %d, %v; want 17 (the lost events had 11-15)", r.Version, err)
	}
	if r := appendN(t, s, "t1", "order-1", 1); r.Version != 18 {
		t.Fatalf("next append: version %d, want 18", r.Version)
	}
	// order-3 did not exist in the backup: it exists now, at version 5.
	if _, err := s.Append(ctx, "t1", "order-3", store.NoStream, ev); !errors.As(err, &conflict) || conflict.Actual != 5 {
		t.Fatalf("append to order-3 with NoStream: %v, want a conflict at version 5", err)
	}
	if r := appendN(t, s, "t1", "order-3", 1); r.Version != 6 {
		t.Fatalf("order-3's next append: version %d, want 6 (the lost events had 1-4)", r.Version)
	}
	if r := appendN(t, s, "t1", "order-2", 1); r.Version != 4 {
		t.Fatalf("order-2, which the restore did not take back: version %d, want 4", r.Version)
	}
	wantLog := []string{}
	for v := 1; v <= 10; v++ {
		wantLog = append(wantLog, fmt.Sprintf("%d order.noted", v))
	}
	wantLog = append(wantLog, "16 "+store.TypeStreamRestored, "17 order.noted", "18 order.noted")
	if diff := cmp.Diff(wantLog, streamVersions(t, s, "t1", "order-1")); diff != "" {
		t.Fatalf("order-1 after the restore (-want +got):\n%s", diff)
	}
	var data store.StreamRestored
	for e, err := range s.ReadStream(ctx, "t1", "order-1", store.ReadStreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == store.TypeStreamRestored {
			if err := json.Unmarshal(e.Data, &data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if data != (store.StreamRestored{From: 11, To: 15}) {
		t.Fatalf("the restored event says %+v, want versions 11-15", data)
	}
	if err := s.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
	findings, err := s.Diagnose(ctx, store.DiagnoseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, f := range findings {
		if f.Severity == store.SeverityProblem {
			t.Errorf("doctor after the restore: %s %v: %s", f.Kind, f.IDs, f.Detail)
		}
		if f.Kind == "stream_version_gaps_restore" {
			if f.Severity != store.SeverityInfo {
				t.Errorf("the restore's gaps are %s, want info", f.Severity)
			}
			listed = f.IDs
		}
	}
	// Doctor lists the restore's gaps as information.
	if diff := cmp.Diff([]string{"t1/order-1:11-15", "t1/order-3:1-4"}, listed); diff != "" {
		t.Errorf("doctor's stream_version_gaps_restore (-want +got):\n%s", diff)
	}
}

// withoutRestored removes from log (readLog's) the events a restore
// appended to the streams it took back (res.RolledBack), and fails when
// one of them is missing.
func withoutRestored(t *testing.T, log map[string]logEvent, res backup.RestoreResult) map[string]logEvent {
	t.Helper()
	for _, r := range res.RolledBack {
		found := false
		for k, e := range log {
			if strings.HasPrefix(k, r.Tenant+"/") && e.Stream == r.Stream && e.Version == r.Had+1 {
				delete(log, k)
				found = true
			}
		}
		if !found {
			t.Errorf("no event of the restore at version %d of %s/%s", r.Had+1, r.Tenant, r.Stream)
		}
	}
	return log
}

// TestCopyRestoredToPostgres: a store restored on SQLite keeps its
// restore's version gaps when copied to PostgreSQL: the invariants hold
// there and the stream's next append continues above the lost versions.
func TestCopyRestoredToPostgres(t *testing.T) {
	base := storetest.PostgresBase(t)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "t1", "order-1", 3)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "t1", "order-1", 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	target := storetest.PostgresSchema(t, base)
	if _, err := backup.Copy(ctx, path, target, nil); err != nil {
		t.Fatalf("copy: %v", err)
	}
	pg, err := store.Open(ctx, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if err := pg.CheckInvariants(ctx); err != nil {
		t.Fatalf("the copy on PostgreSQL: %v", err)
	}
	// 1-3 and the restored event (8): the copied gap 4-7 is not counted.
	if got := countsMatchReads(t, pg, "t1"); got != 4 {
		t.Fatalf("reads on PostgreSQL return %d events, want 4", got)
	}
	if r := appendN(t, pg, "t1", "order-1", 1); r.Version != 9 {
		t.Fatalf("append on PostgreSQL after the copy: version %d, want 9 (the restore's event is 8; 4-7 were lost)", r.Version)
	}
	// Reads starting inside the gap count what they return.
	if _, err := lifecycle.For(pg).Truncate(ctx, "t1", "order-1", 5, store.Any); err != nil {
		t.Fatal(err)
	}
	if got := countsMatchReads(t, pg, "t1"); got != 3 {
		t.Fatalf("reads on PostgreSQL after a truncate before 5 return %d events, want 3 (8, 9 and the truncate's)", got)
	}
	if err := pg.CheckInvariants(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreUnverifiedVersionGaps: the check after the commit finds a
// stream's restore gap missing (removed behind the store's back between
// the commit and the check): the database was replaced, and the error
// says so.
func TestRestoreUnverifiedVersionGaps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	s, err := store.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "t1", "order-1", 2)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "t1", "order-1", 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	defer backup.SetRestoreHooks(nil, func(target string) {
		storetest.RawExec(t, target, `DELETE FROM version_gaps`)
	})()
	_, err = backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true})
	var ue *backup.RestoreUnverifiedError
	if !errors.As(err, &ue) || len(ue.Problems) != 1 || !strings.Contains(ue.Problems[0], `versions 3-4 of stream "order-1"`) {
		t.Fatalf("restore whose version gap went missing after the commit: %v, want *RestoreUnverifiedError naming versions 3-4 of order-1", err)
	}
}

// countsMatchReads checks that each of tenant's streams' StreamInfo.Events
// and the tenant's Stats.Events equal the number of events reads of the
// streams return, and returns that total.
func countsMatchReads(t *testing.T, s *store.Store, tenant string) int64 {
	t.Helper()
	ctx := context.Background()
	var total int64
	for si, err := range s.Streams(ctx, tenant) {
		if err != nil {
			t.Fatal(err)
		}
		read := streamVersions(t, s, tenant, si.Stream)
		if si.Events != int64(len(read)) {
			t.Errorf("stream %q: StreamInfo.Events %d (version %d), a read returns %d events: %v", si.Stream, si.Events, si.Version, len(read), read)
		}
		total += int64(len(read))
	}
	for _, tn := range []string{tenant, ""} {
		st, err := s.Inventory().Stats(ctx, tn)
		if err != nil {
			t.Fatal(err)
		}
		if st.Events != total {
			t.Errorf("Stats(%q).Events %d, reads of the streams return %d events", tn, st.Events, total)
		}
	}
	return total
}

// TestRestoredStreamCounts: after a restore takes streams back, a
// stream's event count (StreamInfo.Events) and the store's (Stats.Events)
// are the events reads return: the versions the restore took back are
// not counted, the eventlite.stream.restored event above them is (a read
// returns it), also when a truncate starts the reads inside the gap.
func TestRestoredStreamCounts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	s := storetest.MustOpenPath(t, path, nil)
	appendN(t, s, "t1", "order-1", 10)
	appendN(t, s, "t1", "order-2", 3)
	appendN(t, s, "t1", "order-4", 10)
	bak := filepath.Join(dir, "backup.db")
	if _, err := backup.Create(ctx, path, bak, nil); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, "t1", "order-1", 5)
	appendN(t, s, "t1", "order-3", 4)
	appendN(t, s, "t1", "order-4", 5)
	if _, err := backup.Restore(ctx, bak, path, &backup.RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	// order-1: 1-10 and the restored event (16); order-2: 1-3; order-3:
	// the restored event (5); order-4: 1-10 and the restored event (16).
	if got := countsMatchReads(t, s, "t1"); got != 11+3+1+11 {
		t.Fatalf("reads return %d events, want 26", got)
	}
	appendN(t, s, "t1", "order-1", 2)
	// Reads of order-4 start at 13, inside the gap 11-15: the restored
	// event (16) and the truncate's (17) are read.
	if _, err := lifecycle.For(s).Truncate(ctx, "t1", "order-4", 13, store.Any); err != nil {
		t.Fatal(err)
	}
	if got := streamVersions(t, s, "t1", "order-4"); len(got) != 2 {
		t.Fatalf("order-4 after a truncate before 13: %v, want the restored and the truncate events", got)
	}
	if got := countsMatchReads(t, s, "t1"); got != 13+3+1+2 {
		t.Fatalf("reads return %d events, want 19", got)
	}
}
