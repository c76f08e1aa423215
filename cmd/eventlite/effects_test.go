package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/user"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/internal/effectjson"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/storetest"
)

// effectFields are the fields of effects list --json, in order.
var effectFields = []string{"tenant", "key", "state", "kind", "resource", "summary", "args", "args_hash", "requested_by", "requested_at",
	"decided_by", "decided_at", "reason", "attempts", "last_error", "provider_ref", "created", "updated", "erasure_key", "args_erased", "args_encrypted"}

// listEffects runs effects list --json and returns each line's fields as
// printed, checking the field names and their order.
func listEffects(t *testing.T, args ...string) []map[string]json.RawMessage {
	t.Helper()
	r := run(t, "", append([]string{"effects", "list", "--json"}, args...)...)
	if r.code != exitOK {
		t.Fatalf("effects list: exit %d: %s", r.code, r.stderr)
	}
	var out []map[string]json.RawMessage
	for _, line := range lines(r.stdout) {
		dec := json.NewDecoder(strings.NewReader(line))
		var names []string
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("line %q", line)
		}
		for dec.More() {
			tok, _ := dec.Token()
			names = append(names, tok.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(names, effectFields) {
			t.Errorf("fields %v, want %v", names, effectFields)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func field(t *testing.T, m map[string]json.RawMessage, name string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(m[name], &s); err != nil {
		t.Fatalf("%s: %s: %v", name, m[name], err)
	}
	return s
}

func TestEffectsCLI(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	// No database file: exit 5, and no file is created.
	for _, args := range [][]string{{"list"}, {"approve", "k", "--args-hash", "x", "--by", "a"}, {"reject", "k", "--by", "a"}} {
		if r := run(t, "", append([]string{"effects", "--db", db}, args...)...); r.code != exitNotFound {
			t.Errorf("%v without a database: exit %d, want 5 (%s)", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read created the file: %v", err)
	}

	s := storetest.MustOpenPath(t, db, nil)
	var calls []string
	call := func(_ context.Context, args json.RawMessage) (string, error) {
		calls = append(calls, string(args))
		return "refund-77", nil
	}
	refund := effect.Intent{Tenant: "default", Key: "refund:o-1", Kind: effect.External, Resource: "order/o-1",
		Summary: "refund 12.50 € to <customer> & notify", RequestedBy: "support-bot", NeedsApproval: true,
		Args: map[string]any{"order": "o-1", "amount": 1250, "note": "<late> & \"damaged\" ✓"}}
	if _, err := effect.For(s).Do(ctx, refund, call); !errors.Is(err, effect.ErrAwaitingApproval) {
		t.Fatal(err)
	}
	dup := refund
	dup.Key, dup.Args = "refund:o-2", map[string]int{"amount": 1}
	if _, err := effect.For(s).Do(ctx, dup, call); !errors.Is(err, effect.ErrAwaitingApproval) {
		t.Fatal(err)
	}
	if _, err := effect.For(s).Run(ctx, "default", "email:1", func(context.Context) (string, error) { return "msg-1", nil }); err != nil {
		t.Fatal(err)
	}
	other := refund
	other.Tenant = "acme"
	if _, err := effect.For(s).Do(ctx, other, call); !errors.Is(err, effect.ErrAwaitingApproval) {
		t.Fatal(err)
	}

	all := listEffects(t, "--db", db)
	if len(all) != 3 {
		t.Fatalf("%d effects listed for tenant default, want 3", len(all))
	}
	var hash string
	for _, m := range all {
		// args_hash is the SHA-256 of exactly the args bytes printed.
		sum := sha256.Sum256(m["args"])
		if got := field(t, m, "args_hash"); got != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: args_hash %s is not the SHA-256 of %s", m["key"], got, m["args"])
		}
		if field(t, m, "tenant") != "default" {
			t.Errorf("another tenant listed: %s", m["tenant"])
		}
		for _, name := range []string{"created", "updated"} {
			if ts, err := time.Parse(time.RFC3339Nano, field(t, m, name)); err != nil || ts.Location() != time.UTC {
				t.Errorf("%s %s: %v", name, m[name], err)
			}
		}
		switch field(t, m, "key") {
		case "refund:o-1":
			hash = field(t, m, "args_hash")
			if string(m["args"]) != `{"amount":1250,"note":"<late> & \"damaged\" ✓","order":"o-1"}` || field(t, m, "state") != "AWAITING_APPROVAL" ||
				field(t, m, "summary") != refund.Summary || field(t, m, "requested_by") != "support-bot" || field(t, m, "decided_at") != "" {
				t.Errorf("refund listed as %v", m)
			}
		case "email:1":
			if string(m["args"]) != "null" || field(t, m, "kind") != "external" || field(t, m, "provider_ref") != "msg-1" ||
				field(t, m, "requested_at") != "" || string(m["attempts"]) != "1" {
				t.Errorf("email listed as %v", m)
			}
		}
	}
	if got := listEffects(t, "--db", db, "--awaiting"); len(got) != 2 || field(t, got[0], "state") != "AWAITING_APPROVAL" {
		t.Errorf("--awaiting: %v", got)
	}
	if got := listEffects(t, "--db", db, "--tenant", "acme"); len(got) != 1 || field(t, got[0], "tenant") != "acme" {
		t.Errorf("--tenant acme: %v", got)
	}
	text := mustRun(t, "", "effects", "list", "--db", db)
	if !strings.Contains(text.stdout, "refund:o-1") || !strings.Contains(text.stdout, hash) {
		t.Errorf("text list:\n%s", text.stdout)
	}

	// Decisions, checked in order: key, state, hash.
	code := func(want int, args ...string) result {
		t.Helper()
		r := run(t, "", append([]string{"effects", "--db", db}, args...)...)
		if r.code != want {
			t.Errorf("effects %v: exit %d, want %d (stderr %s)", args, r.code, want, r.stderr)
		}
		return r
	}
	code(exitNotFound, "approve", "refund:nope", "--args-hash", hash, "--by", "alice")
	code(exitNotFound, "approve", "refund:o-1", "--args-hash", hash, "--by", "alice", "--tenant", "other")
	if r := code(exitInvalid, "approve", "email:1", "--args-hash", "bad", "--by", "alice"); !strings.Contains(r.stderr, "COMPLETED") {
		t.Errorf("a completed effect: %s", r.stderr)
	}
	for _, h := range []string{strings.Repeat("a", 64), "zz", strings.ToUpper(hash)} {
		code(exitInvalid, "approve", "refund:o-1", "--args-hash", h, "--by", "alice")
	}
	code(exitUsage, "approve", "refund:o-1", "--by", "alice")
	code(exitUsage, "reject", "refund:o-1", "--args-hash", hash)
	code(exitUsage, "approve", "refund:o-1", "--args-hash", hash, "--reason", "why")
	code(exitUsage, "list", "--by", "x")
	code(exitInvalid, "approve", "refund:o-1", "--args-hash", hash, "--by", "ali\tce")
	if e, _, _ := effect.For(s).Get(ctx, "default", "refund:o-1"); e.State != effect.AwaitingApproval || len(calls) != 0 {
		t.Fatalf("refused decisions changed %+v", e)
	}
	r := code(exitOK, "approve", "refund:o-1", "--args-hash", hash, "--by", "alice", "--json")
	var approved effectjson.Effect
	if err := json.Unmarshal([]byte(r.stdout), &approved); err != nil || approved.State != "APPROVED" || approved.DecidedBy != "alice" || approved.DecidedAt == "" {
		t.Errorf("approve --json: %s %v", r.stdout, err)
	}
	if r := code(exitOK, "approve", "refund:o-1", "--args-hash", hash, "--by", "bob"); !strings.Contains(r.stdout, "already approved by alice") {
		t.Errorf("second approval: %s", r.stdout)
	}
	// The service runs it once, with the stored bytes.
	e, err := effect.For(s).Do(ctx, refund, call)
	if err != nil || e.State != effect.Completed || e.DecidedBy != "alice" || len(calls) != 1 || calls[0] != `{"amount":1250,"note":"<late> & \"damaged\" ✓","order":"o-1"}` {
		t.Fatalf("run after approval: %+v %v %q", e, err, calls)
	}

	// Reject, by default as the OS user.
	code(exitOK, "reject", "refund:o-2", "--reason", "duplicate of o-1")
	got, _, _ := effect.For(s).Get(ctx, "default", "refund:o-2")
	if u, err := user.Current(); err == nil && (got.State != effect.Rejected || got.DecidedBy != u.Username || got.Reason != "duplicate of o-1") {
		t.Errorf("rejected: %+v (OS user %q)", got, u.Username)
	}
	if r := code(exitInvalid, "approve", "refund:o-2", "--args-hash", got.ArgsHash(), "--by", "alice"); !strings.Contains(r.stderr, "REJECTED") {
		t.Errorf("approve a rejected effect: %s", r.stderr)
	}
	if r := code(exitInvalid, "reject", "refund:o-2", "--by", "alice"); !strings.Contains(r.stderr, `"refund:o-2" is REJECTED: only an effect AWAITING_APPROVAL or APPROVED can be rejected`) {
		t.Errorf("reject a rejected effect: %s", r.stderr)
	}
	code(exitInvalid, "reject", "refund:o-1", "--by", "alice") // completed
	if _, err := effect.For(s).Do(ctx, dup, call); !errors.Is(err, effect.ErrRejected) || len(calls) != 1 {
		t.Errorf("a rejected effect ran: %v", err)
	}
	code(exitUsage, "effects-nope")
}

// doctor's --approval-age and --approved-age bound the two findings.
func TestDoctorEffectsAwaitingApproval(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	s := storetest.MustOpenPath(t, db, nil)
	run1 := effect.Intent{Tenant: "default", Key: "delete:a", Kind: effect.Irreversible, RequestedBy: "gdpr", NeedsApproval: true, Args: []int{1}}
	run2 := run1
	run2.Key = "delete:b"
	for _, r := range []effect.Intent{run1, run2} {
		if _, err := effect.For(s).Do(ctx, r, func(context.Context, json.RawMessage) (string, error) { return "", nil }); !errors.Is(err, effect.ErrAwaitingApproval) {
			t.Fatal(err)
		}
	}
	b, _, _ := effect.For(s).Get(ctx, "default", "delete:b")
	mustRun(t, "", "effects", "approve", "delete:b", "--args-hash", b.ArgsHash(), "--by", "alice", "--db", db)
	find := func(rep doctorReport, kind string) store.Finding {
		for _, f := range rep.Findings {
			if f.Kind == kind {
				return f
			}
		}
		return store.Finding{}
	}
	rep, r := doctorJSON(t, "--db", db)
	if f := find(rep, "effects_awaiting_approval"); f.Count != 0 || find(rep, "effects_approved_not_run").Count != 0 {
		t.Errorf("young effects reported by default bounds: %+v (exit %d)", rep, r.code)
	}
	rep, r = doctorJSON(t, "--db", db, "--approval-age", "1ns", "--approved-age", "1ns")
	aw, ap := find(rep, "effects_awaiting_approval"), find(rep, "effects_approved_not_run")
	if r.code != exitIncomplete || aw.Severity != "problem" || aw.Count != 1 || aw.IDs[0] != "default:delete:a" ||
		ap.Severity != "problem" || ap.Count != 1 || ap.IDs[0] != "default:delete:b" {
		t.Errorf("exit %d, findings %+v", r.code, rep.Findings)
	}
	if r := run(t, "", "doctor", "--db", db, "--approval-age", "0s"); r.code != exitUsage {
		t.Errorf("a zero bound: exit %d", r.code)
	}
}
