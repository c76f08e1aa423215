package projection_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// An account's events. Deposits changed shape: version 1 carried whole
// units, version 2 cents; an upcaster turns the old shape into the new.
type (
	accOpened struct {
		Owner string `json:"owner"`
	}
	accDepositedV1 struct {
		Amount int64 `json:"amount"`
	}
	accDeposited struct {
		Cents int64 `json:"cents"`
	}
	accWithdrawn struct {
		Cents int64 `json:"cents"`
	}
)

const depositedV2 = "urn:test:account.deposited/v2"

func accountRegistry() *envelope.Registry {
	var r envelope.Registry
	envelope.Register[accOpened](&r, "account.opened")
	envelope.Register[accDepositedV1](&r, "account.deposited")
	envelope.Register[accDeposited](&r, "account.deposited", envelope.Schema(depositedV2))
	envelope.Register[accWithdrawn](&r, "account.withdrawn")
	envelope.RegisterUpcaster(&r, "account.deposited", 1, func(e envelope.Event) (envelope.Event, error) {
		old, err := envelope.DecodeData[accDepositedV1](e)
		if err != nil {
			return e, err
		}
		e.Data, _ = json.Marshal(accDeposited{Cents: old.Amount * 100})
		e.DataSchema = depositedV2
		return e, nil
	})
	return &r
}

// The read model both forms build: one row per account, with the
// metadata of the last event applied to it.
const accountsSchema = `CREATE TABLE {table} (
	tenant TEXT NOT NULL, account TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '', cents INTEGER NOT NULL DEFAULT 0,
	events INTEGER NOT NULL DEFAULT 0, last_version INTEGER, last_position INTEGER, last_time INTEGER,
	last_id TEXT, last_correlation TEXT, last_causation TEXT, last_type TEXT, last_source TEXT,
	PRIMARY KEY (tenant, account))`

type accountMeta struct {
	Tenant, Stream, ID, CorrelationID, CausationID, Type, Source string
	Version, Position                                            int64
	Time                                                         time.Time
}

func upsertAccount(ctx context.Context, tx *projection.Tx, table string, m accountMeta, owner string, cents int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO `+tx.Table(table)+` (tenant, account, owner, cents, events, last_version, last_position, last_time,
			last_id, last_correlation, last_causation, last_type, last_source)
		VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant, account) DO UPDATE SET owner = CASE WHEN excluded.owner = '' THEN owner ELSE excluded.owner END,
			cents = cents + excluded.cents, events = events + 1, last_version = excluded.last_version,
			last_position = excluded.last_position, last_time = excluded.last_time, last_id = excluded.last_id,
			last_correlation = excluded.last_correlation, last_causation = excluded.last_causation,
			last_type = excluded.last_type, last_source = excluded.last_source`,
		m.Tenant, m.Stream, owner, cents, m.Version, m.Position, m.Time.UnixNano(), m.ID, m.CorrelationID, m.CausationID, m.Type, m.Source)
	return err
}

func metaOf[T any](e projection.Event[T]) accountMeta {
	return accountMeta{Tenant: e.Tenant, Stream: e.Stream, ID: e.ID, CorrelationID: e.CorrelationID, CausationID: e.CausationID,
		Type: e.Type, Source: e.Source, Version: e.Version, Position: e.Position, Time: e.Time}
}

// typedAccounts is the read model in the typed form.
func typedAccounts(name string, reg *envelope.Registry) projection.Projection {
	h := projection.NewHandlers(reg)
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[accOpened]) error {
		return upsertAccount(ctx, tx, name, metaOf(e), e.Data.Owner, 0)
	})
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[accDeposited]) error {
		return upsertAccount(ctx, tx, name, metaOf(e), "", e.Data.Cents)
	})
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[accWithdrawn]) error {
		return upsertAccount(ctx, tx, name, metaOf(e), "", -e.Data.Cents)
	})
	return projection.Projection{Name: name, Handlers: h, Tables: []projection.Table{{Name: name, Schema: accountsSchema}}}
}

// untypedAccounts is the same read model written by hand: the types
// listed, the data decoded and the old shape converted in Apply.
func untypedAccounts(name string) projection.Projection {
	return projection.Projection{
		Name:   name,
		Types:  []string{"account.opened", "account.deposited", "account.withdrawn"},
		Tables: []projection.Table{{Name: name, Schema: accountsSchema}},
		Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
			m := accountMeta{Tenant: e.Tenant, Stream: e.Stream, ID: e.ID, CorrelationID: e.CorrelationID, CausationID: e.CausationID,
				Type: e.Type, Source: e.Source, Version: e.StreamVersion, Position: e.Position, Time: e.Time}
			var d struct {
				Owner  string `json:"owner"`
				Amount int64  `json:"amount"`
				Cents  int64  `json:"cents"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return err
			}
			switch {
			case e.Type == "account.deposited" && envelope.SchemaVersion(e) == 1:
				d.Cents = d.Amount * 100
			case e.Type == "account.withdrawn":
				d.Cents = -d.Cents
			}
			return upsertAccount(ctx, tx, name, m, d.Owner, d.Cents)
		},
	}
}

type accountRow struct {
	Tenant, Account, Owner                                       string
	Cents, Events, LastVersion, LastPosition, LastTime           int64
	LastID, LastCorrelation, LastCausation, LastType, LastSource string
}

func readAccounts(t *testing.T, s *store.Store, table string) []accountRow {
	t.Helper()
	ctx := context.Background()
	var rows []accountRow
	err := s.View(ctx, func(tx *store.ReadTx) error {
		rs, err := tx.QueryContext(ctx, `SELECT tenant, account, owner, cents, events, last_version, last_position, last_time,
			last_id, last_correlation, last_causation, last_type, last_source FROM `+table+` ORDER BY tenant, account`)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var r accountRow
			if err := rs.Scan(&r.Tenant, &r.Account, &r.Owner, &r.Cents, &r.Events, &r.LastVersion, &r.LastPosition, &r.LastTime,
				&r.LastID, &r.LastCorrelation, &r.LastCausation, &r.LastType, &r.LastSource); err != nil {
				return err
			}
			rows = append(rows, r)
		}
		return rs.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// randomAccountLog appends n events at random to a few accounts in two
// tenants: openings, deposits in both schema versions, withdrawals, in
// batches of one to three, and events of other types between them.
func randomAccountLog(t *testing.T, s *store.Store, reg *envelope.Registry, rng *rand.Rand, n int) {
	t.Helper()
	ctx := context.Background()
	opened := map[string]bool{}
	for i := 0; i < n; {
		tenant := []string{"default", "bank-b"}[rng.IntN(2)]
		acc := fmt.Sprintf("acc-%d", rng.IntN(8))
		var batch []envelope.Event
		for range 1 + rng.IntN(3) {
			var (
				e   envelope.Event
				err error
			)
			switch k := rng.IntN(10); {
			case !opened[tenant+"/"+acc]:
				e, err = reg.Encode("account.opened", accOpened{Owner: fmt.Sprintf("owner-%d", rng.IntN(100))})
				opened[tenant+"/"+acc] = true
			case k < 3:
				e, err = reg.Encode("account.deposited", accDepositedV1{Amount: rng.Int64N(100)})
			case k < 6:
				e, err = reg.Encode("account.deposited", accDeposited{Cents: rng.Int64N(10_000)})
			case k < 8:
				e, err = reg.Encode("account.withdrawn", accWithdrawn{Cents: rng.Int64N(5_000)})
			default:
				e, err = envelope.New("account.audited", map[string]string{"by": "auditor"}) // read by neither
			}
			if err != nil {
				t.Fatal(err)
			}
			e.Source = fmt.Sprintf("/bank/%d", rng.IntN(3))
			e.CorrelationID = fmt.Sprintf("corr-%d", rng.IntN(20))
			if rng.IntN(2) == 0 {
				e.CausationID = fmt.Sprintf("cmd-%d", rng.IntN(50))
			}
			e.Time = time.Unix(1_700_000_000+rng.Int64N(1_000_000), rng.Int64N(1e9)).UTC()
			batch = append(batch, e)
			i++
		}
		if _, err := s.Append(ctx, tenant, acc, store.Any, batch...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTypedMatchesUntyped: the typed form and the untyped form of one read
// model, over the same random log, build the same rows, metadata included.
func TestTypedMatchesUntyped(t *testing.T) {
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	s := storetest.MustOpen(t, nil)
	reg := accountRegistry()
	n := 600
	if testing.Short() {
		n = 120
	}
	randomAccountLog(t, s, reg, rng, n)
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	typed := typedAccounts("typed_accounts", reg)
	if got, want := typed.EventTypes(), []string{"account.opened", "account.deposited", "account.withdrawn"}; !cmp.Equal(got, want) {
		t.Errorf("typed EventTypes = %v, want %v (from the handlers)", got, want)
	}
	for _, p := range []projection.Projection{typed, untypedAccounts("untyped_accounts")} {
		// Small batches: several transactions, each checkpointed.
		r, err := projection.NewRunner(s, p, &projection.RunnerOptions{BatchSize: 1 + rng.IntN(50)})
		if err != nil {
			t.Fatal(err)
		}
		if cp, err := r.CatchUp(ctx); err != nil || cp != head {
			t.Fatalf("%s: CatchUp = %d, %v; want %d", p.Name, cp, err, head)
		}
	}
	want := readAccounts(t, s, "untyped_accounts")
	got := readAccounts(t, s, "typed_accounts")
	if len(want) == 0 {
		t.Fatal("the untyped read model is empty: the log did not reach it")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("typed read model differs from the untyped one (-untyped +typed):\n%s", diff)
	}
}

// appendRaw appends one event with the data given as it is, bypassing the
// registry: data another version of the service wrote, say.
func appendRaw(t *testing.T, s *store.Store, stream, typ, schema, data string) envelope.Event {
	t.Helper()
	e, err := envelope.New(typ, json.RawMessage(data))
	if err != nil {
		t.Fatal(err)
	}
	e.Source, e.DataSchema = "/test", schema
	res, err := s.Append(context.Background(), "default", stream, store.Any, e)
	if err != nil {
		t.Fatal(err)
	}
	return res.Events[0]
}

// TestTypedUndecodableData: an event whose data does not decode into its
// registered type is quarantined at once, with the data named as the
// cause; the projection stops there (or skips it when configured), and
// skipping it from quarantine lets a stopped projection go on.
func TestTypedUndecodableData(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []projection.OnError{projection.Stop, projection.Skip} {
		t.Run(map[projection.OnError]string{projection.Stop: "stop", projection.Skip: "skip"}[mode], func(t *testing.T) {
			s := storetest.MustOpen(t, nil)
			reg := accountRegistry()
			appendRaw(t, s, "acc-1", "account.opened", "", `{"owner":"ann"}`)
			appendRaw(t, s, "acc-1", "account.deposited", depositedV2, `{"cents":500}`)
			bad := appendRaw(t, s, "acc-1", "account.deposited", depositedV2, `{"cents":"a lot"}`)
			appendRaw(t, s, "acc-1", "account.withdrawn", "", `{"cents":200}`)
			p := typedAccounts("accounts", reg)
			r, err := projection.NewRunner(s, p, &projection.RunnerOptions{OnError: mode, MaxAttempts: 3})
			if err != nil {
				t.Fatal(err)
			}
			cp, err := r.CatchUp(ctx)

			qs, qerr := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "accounts", Open: true})
			if qerr != nil {
				t.Fatal(qerr)
			}
			if len(qs) != 1 {
				t.Fatalf("quarantine holds %d open entries, want 1: %+v", len(qs), qs)
			}
			q := qs[0]
			if q.EventID != bad.ID || q.Position != bad.Position || q.Reason != projection.ReasonUninterpretable || q.Attempts != 1 {
				t.Errorf("entry %+v: want event %s at %d, reason %s, 1 attempt (data does not get better on a retry)",
					q, bad.ID, bad.Position, projection.ReasonUninterpretable)
			}
			if !strings.Contains(q.Error, "data") || !strings.Contains(q.Error, "does not decode") {
				t.Errorf("entry error %q does not name the data as the cause", q.Error)
			}

			if mode == projection.Skip {
				if err != nil || cp != bad.Position+1 {
					t.Fatalf("CatchUp = %d, %v; want past the event, at %d", cp, err, bad.Position+1)
				}
				want := int64(500 - 200)
				if got := readAccounts(t, s, "accounts"); len(got) != 1 || got[0].Cents != want {
					t.Fatalf("read model %+v; want acc-1 at %d cents", got, want)
				}
				return
			}

			var stopped *projection.StoppedError
			if !errors.As(err, &stopped) || !errors.Is(err, projection.ErrStopped) || !errors.Is(err, envelope.ErrInvalidEvent) {
				t.Fatalf("CatchUp = %d, %v; want a *StoppedError matching ErrStopped and envelope.ErrInvalidEvent", cp, err)
			}
			if stopped.Position != bad.Position || stopped.EventID != bad.ID || stopped.Attempts != 1 {
				t.Errorf("stopped at %+v; want event %s at %d after 1 attempt", stopped, bad.ID, bad.Position)
			}
			if !strings.Contains(err.Error(), "the event's data is at fault") {
				t.Errorf("message %q does not say the data is at fault", err)
			}
			if cp, _ := projection.Records(s).Checkpoint(ctx, "accounts"); cp != bad.Position-1 {
				t.Errorf("checkpoint %d; want %d, just before the event", cp, bad.Position-1)
			}
			if got := readAccounts(t, s, "accounts"); len(got) != 1 || got[0].Cents != 500 {
				t.Fatalf("read model %+v; want acc-1 at 500 cents (stopped before the bad event)", got)
			}
			// A restart without a person's decision stops there again.
			if _, err := r.CatchUp(ctx); !errors.Is(err, projection.ErrStopped) {
				t.Fatalf("CatchUp again = %v; want it stopped on the same event", err)
			}
			// eventlite quarantine skip accounts <id> calls this.
			skipped, err := projection.Quarantine(s).Skip(ctx, "accounts", bad.ID)
			if err != nil || len(skipped) != 1 {
				t.Fatalf("SkipQuarantined = %v, %v", skipped, err)
			}
			if cp, err := r.CatchUp(ctx); err != nil || cp != bad.Position+1 {
				t.Fatalf("CatchUp after the skip = %d, %v; want %d", cp, err, bad.Position+1)
			}
			if got := readAccounts(t, s, "accounts"); len(got) != 1 || got[0].Cents != 300 {
				t.Fatalf("read model %+v; want acc-1 at 300 cents (went on past the skipped event)", got)
			}
			if rec, err := projection.Records(s).Get(ctx, "accounts"); err != nil || rec.Status == projection.StatusStopped {
				t.Errorf("projection record %+v, %v; want it no longer stopped", rec, err)
			}
		})
	}
}

// A handler's own failure is still the handler's: retried, then
// quarantined as a handler error, not a data problem.
func TestTypedHandlerErrorIsNotData(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	reg := accountRegistry()
	appendRaw(t, s, "acc-1", "account.opened", "", `{"owner":"ann"}`)
	h := projection.NewHandlers(reg)
	projection.On(h, func(context.Context, *projection.Tx, projection.Event[accOpened]) error {
		return errors.New("disk on fire")
	})
	r, err := projection.NewRunner(s, projection.Projection{Name: "fails", Handlers: h}, &projection.RunnerOptions{MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CatchUp(ctx); !errors.Is(err, projection.ErrStopped) || errors.Is(err, envelope.ErrInvalidEvent) {
		t.Fatalf("CatchUp = %v; want stopped on a handler error", err)
	}
	qs, err := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "fails", Open: true})
	if err != nil || len(qs) != 1 || qs[0].Reason != projection.ReasonHandlerError || qs[0].Attempts != 2 {
		t.Fatalf("quarantine %+v, %v; want one handler_error entry after 2 attempts", qs, err)
	}
}

func TestTypedDefinitionChecked(t *testing.T) {
	reg := accountRegistry()
	h := projection.NewHandlers(reg)
	projection.On(h, func(context.Context, *projection.Tx, projection.Event[accOpened]) error { return nil })
	apply := func(context.Context, *projection.Tx, envelope.Event) error { return nil }
	for _, tc := range []struct {
		name string
		p    projection.Projection
	}{
		{"handlers and apply", projection.Projection{Name: "x", Handlers: h, Apply: apply}},
		{"handlers and apply batch", projection.Projection{Name: "x", Handlers: h,
			ApplyBatch: func(context.Context, *projection.Tx, []envelope.Event) error { return nil }}},
		{"no handler", projection.Projection{Name: "x", Handlers: projection.NewHandlers(reg)}},
		{"nothing", projection.Projection{Name: "x"}},
	} {
		if err := tc.p.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", tc.name)
		}
	}
	if err := (&projection.Projection{Name: "x", Handlers: h}).Validate(); err != nil {
		t.Errorf("a typed projection: %v", err)
	}
	mustPanic := func(name string, fn func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		fn()
	}
	type unregistered struct{}
	mustPanic("unregistered type", func() {
		projection.On(h, func(context.Context, *projection.Tx, projection.Event[unregistered]) error { return nil })
	})
	mustPanic("second handler", func() {
		projection.On(h, func(context.Context, *projection.Tx, projection.Event[accOpened]) error { return nil })
	})
}

// WaitFor takes 0 (a command that appended nothing) as nothing to wait
// for: it answers at once, even from a closed store; a negative position
// is refused.
func TestWaitForZero(t *testing.T) {
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "closed.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := projection.WaitFor(context.Background(), s, "never_ran", -1); err == nil {
		t.Error("WaitFor(-1) accepted")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := projection.WaitFor(context.Background(), s, "never_ran", 0); err != nil {
		t.Errorf("WaitFor(0) = %v; want nil at once", err)
	}
	if err := projection.WaitFor(context.Background(), s, "never_ran", 1); !errors.Is(err, store.ErrClosed) {
		t.Errorf("WaitFor(1) on a closed store = %v; want ErrClosed", err)
	}
}

// A Deliver handler that finds the data at fault is not retried either:
// the event is quarantined as uninterpretable at its first attempt.
func TestDeliverDataAtFaultNotRetried(t *testing.T) {
	ctx := context.Background()
	s := storetest.MustOpen(t, nil)
	bad := appendRaw(t, s, "acc-1", "account.deposited", depositedV2, `{"cents":"a lot"}`)
	reg := accountRegistry()
	calls := 0
	p := projection.Projection{Name: "outside", Deliver: func(_ context.Context, e envelope.Event) error {
		calls++
		_, err := reg.Decode(e)
		return err
	}}
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	var stopped *projection.StoppedError
	if _, err := r.CatchUp(ctx); !errors.As(err, &stopped) || !errors.Is(err, envelope.ErrInvalidEvent) || stopped.Attempts != 1 {
		t.Fatalf("CatchUp = %v; want stopped after 1 attempt on invalid data", err)
	}
	if calls != 1 {
		t.Errorf("Deliver called %d times; want 1", calls)
	}
	qs, err := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{Consumer: "outside", Open: true})
	if err != nil || len(qs) != 1 || qs[0].EventID != bad.ID || qs[0].Reason != projection.ReasonUninterpretable || qs[0].Attempts != 1 {
		t.Fatalf("quarantine %+v, %v; want one uninterpretable entry for %s after 1 attempt", qs, err, bad.ID)
	}
}
