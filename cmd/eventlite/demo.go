package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/aggregate"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/backup"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/outbox"
)

// demoApplicationID marks a database the demo created ("ELDM" in the
// SQLite header's application_id), so a rerun replaces only such a file.
const demoApplicationID = 0x454c444d

const demoDefaultDB = "eventlite-demo.db"

var demoCommand = &command{
	name:    "demo",
	summary: "walk through the whole design on a demo database",
	usage:   "eventlite demo [--db PATH]",
	about: `Runs the design end to end, on ./eventlite-demo.db (or --db; $EVENTLITE_DB is
deliberately ignored, so the demo never writes into a real store) in the default
tenant, with a NATS JetStream server started in-process, and prints what each
step did: orders appended with an expected version, a conflicting append
refused, an idempotent retry answered from the ledger, the outbox relayed to
JetStream, a consumer receiving the events shuffled and duplicated (deferral,
drain, dedupe), a replay with its watermark check, an external effect recorded
once through the effect ledger, and a final doctor report.

A rerun replaces a database an earlier demo created and refuses any other file.
The database stays for you to explore with read, tail, streams and catalog.
The demo runs on a SQLite file only: a PostgreSQL --db exits 2, "not supported
on PostgreSQL".`,
	new: func() runner { return &demoCmd{} },
}

type demoCmd struct{}

func (*demoCmd) flags(*flag.FlagSet) {}

func (*demoCmd) run(ctx context.Context, c *cli, _ []string) error {
	path := demoDefaultDB
	if c.global.dbSet {
		path = c.global.db
		if c.onPostgres() {
			return &fileOnlyError{what: "demo", instead: "the demo makes and replaces a SQLite file of its own; drop --db (it ignores $EVENTLITE_DB) or give it a file's path"}
		}
	}
	if c.global.tenant != "default" {
		return &usageError{cmd: demoCommand, err: errors.New("the demo runs in the default tenant: drop --tenant")}
	}
	if err := prepareDemoFile(ctx, path); err != nil {
		return err
	}
	d := &demo{c: c, out: c.stdout, path: path}
	err := d.run(ctx)
	if err != nil && ctx.Err() != nil {
		return &interruptedError{msg: "demo interrupted; run it again (it replaces its database)"}
	}
	return err
}

// prepareDemoFile removes a database an earlier demo made, and refuses to
// touch any other file.
func prepareDemoFile(ctx context.Context, path string) error {
	fi, err := backup.Inspect(ctx, path)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return &exitError{code: exitUsage, err: fmt.Errorf("%s exists and is not a demo database (%v): the demo replaces only a file it created; pass another --db", path, err)}
	case fi.ApplicationID != demoApplicationID:
		return &exitError{code: exitUsage, err: fmt.Errorf("%s exists and was not created by eventlite demo: the demo replaces only its own database; pass another --db", path)}
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

type demo struct {
	c    *cli
	out  io.Writer
	path string
	step int
	s    *store.Store
}

func (d *demo) title(format string, args ...any) {
	d.step++
	fmt.Fprintf(d.out, "\n%d. %s\n", d.step, fmt.Sprintf(format, args...))
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, "   %s\n", fmt.Sprintf(format, args...))
}

func (d *demo) run(ctx context.Context) (err error) {
	start := time.Now()
	d.s, err = store.Open(ctx, d.path, &store.Options{Logger: d.c.log})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.s.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := d.s.Update(ctx, func(tx *store.Tx) error {
		return store.Bookkeeping(inside.Key{}, tx).SetApplicationID(ctx, demoApplicationID)
	}); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "eventlite demo on %s (tenant default)\n", d.path)

	orders, err := aggregate.New(d.s, demoOrders(), &aggregate.Options{Logger: d.c.log})
	if err != nil {
		return err
	}
	steps := []func(context.Context, *aggregate.Handler[demoOrder]) error{
		d.appendOrders, d.conflict, d.retry, d.compensate,
	}
	for _, step := range steps {
		if err := step(ctx, orders); err != nil {
			return err
		}
	}
	for _, step := range []func(context.Context) error{d.relayAndConsume, d.replay, d.effect, d.doctor} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(d.out, "\nDone in %s. Explore the database:\n", time.Since(start).Round(time.Millisecond))
	db := d.path
	if strings.ContainsAny(db, " '\"$") {
		db = "'" + strings.ReplaceAll(db, "'", `'\''`) + "'"
	}
	for _, cmd := range []string{"read order-1", "tail", "streams", "catalog", "doctor"} {
		fmt.Fprintf(d.out, "  eventlite --db %s %s\n", db, cmd)
	}
	return nil
}

func (d *demo) send(ctx context.Context, h *aggregate.Handler[demoOrder], stream, op string, p any) (aggregate.Result, error) {
	return h.Handle(ctx, aggregate.Command{Stream: stream, OperationID: op, Payload: p})
}

func (d *demo) appendOrders(ctx context.Context, h *aggregate.Handler[demoOrder]) error {
	d.title("Orders, appended with the loaded version as the expected one")
	for _, step := range []struct {
		stream, op string
		p          any
		what       string
	}{
		{"order-1", "place-order-1", placeOrder{Total: 42}, "placed"},
		{"order-1", "pay-order-1", payOrder{Amount: 42}, "paid"},
		{"order-2", "place-order-2", placeOrder{Total: 7}, "placed"},
	} {
		res, err := d.send(ctx, h, step.stream, step.op, step.p)
		if err != nil {
			return err
		}
		d.say("%s %s: version %d, position %d", step.stream, step.what, res.Version, res.Positions[0])
	}
	return nil
}

func (d *demo) conflict(ctx context.Context, _ *aggregate.Handler[demoOrder]) error {
	d.title("A conflicting append is refused")
	e, _ := envelope.New("order.paid", orderPaid{Amount: 42})
	e.Source = "/eventlite-demo/stale-writer"
	_, err := d.s.Append(ctx, "default", "order-1", store.Exact(1), e)
	var ce *store.ConflictError
	if !errors.As(err, &ce) {
		return fmt.Errorf("the demo's conflicting append was not refused: %v", err)
	}
	d.say("a writer that loaded order-1 at version 1 appends again: refused, the stream is at version %d", ce.Actual)
	d.say("nothing was written; the writer reloads and decides again (the CLI exits 3)")
	return nil
}

func (d *demo) retry(ctx context.Context, h *aggregate.Handler[demoOrder]) error {
	d.title("An idempotent retry is answered from the operation ledger")
	first, err := d.send(ctx, h, "order-2", "pay-order-2", payOrder{Amount: 7})
	if err != nil {
		return err
	}
	again, err := d.send(ctx, h, "order-2", "pay-order-2", payOrder{Amount: 7})
	if err != nil {
		return err
	}
	d.say("pay order-2 (operation pay-order-2): version %d", first.Version)
	d.say("the same operation again, as after a lost reply: answered from the ledger=%v, version %d, nothing appended", again.Replayed, again.Version)
	_, err = d.send(ctx, h, "order-2", "pay-order-2", payOrder{Amount: 9})
	if !errors.Is(err, store.ErrIdempotencyMismatch) {
		return fmt.Errorf("a mismatched retry was not refused: %v", err)
	}
	d.say("the same operation id with another amount: refused (the CLI exits 4)")
	return nil
}

func (d *demo) compensate(ctx context.Context, h *aggregate.Handler[demoOrder]) error {
	d.title("A rejected reservation is compensated, once")
	res, err := d.send(ctx, h, "order-1", "reserve-order-1", rejectReservation{Reason: "out_of_stock"})
	if err != nil {
		return err
	}
	d.say("order-1: stock reservation rejected (out_of_stock) at version %d", res.Version)
	key := fmt.Sprintf("order-1@%d", res.Version)
	c1, err := d.send(ctx, h, "order-1", key, compensate{RejectedVersion: res.Version})
	if err != nil {
		return err
	}
	c2, err := d.send(ctx, h, "order-1", key, compensate{RejectedVersion: res.Version})
	if err != nil {
		return err
	}
	d.say("compensation %s recorded twice: one cancellation (version %d; the second answered from the ledger=%v)", key, c1.Version, c2.Replayed)
	return nil
}

// startNATS starts an in-process NATS server with JetStream on dir.
func startNATS(dir string) (*server.Server, error) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("the in-process NATS server did not start")
	}
	return ns, nil
}

func (d *demo) relayAndConsume(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "eventlite-demo-nats")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ns, err := startNATS(filepath.Join(dir, "jetstream"))
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return err
	}
	defer nc.Close()

	d.title("The outbox, relayed to NATS JetStream")
	pub, err := natsjs.NewPublisher(ctx, natsjs.Options{Conn: nc, CreateStream: true, Logger: d.c.log})
	if err != nil {
		return err
	}
	defer pub.Close()
	relay, err := publish.New(publish.Options{Store: d.s, Publisher: pub, Once: true, Logger: d.c.log})
	if err != nil {
		return err
	}
	if err := relay.Run(ctx); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	st := relay.Stats()
	ost, err := outbox.For(d.s).Stats(ctx)
	if err != nil {
		return err
	}
	d.say("embedded JetStream at %s, stream %s", ns.ClientURL(), natsjs.DefaultStream)
	d.say("relay published %d events, each with Nats-Msg-Id <tenant>:<event id>; outbox now holds %d; lease released", st.Published, ost.Pending)

	d.title("A consumer receives them shuffled and duplicated")
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	msgs, err := fetchAll(ctx, js, int(st.Published))
	if err != nil {
		return err
	}
	// Another service's view of the orders: deliveries come shuffled, and
	// some twice, as a broker may deliver them.
	rng := rand.New(rand.NewPCG(7, 7))
	var deliveries []envelope.Event
	for i, e := range msgs {
		deliveries = append(deliveries, e)
		if i%2 == 0 {
			deliveries = append(deliveries, e)
		}
	}
	rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	shipping, err := d.shippingConsumer(ctx)
	if err != nil {
		return err
	}
	counts := map[projection.Outcome]int{}
	for _, e := range deliveries {
		res, err := shipping.Handle(ctx, e)
		if err != nil {
			return err
		}
		counts[res.Outcome]++
		note := ""
		switch res.Outcome {
		case projection.Deferred:
			note = " (a version before it is missing: kept durably until it comes)"
		case projection.Applied:
			if res.Drained > 0 {
				note = fmt.Sprintf(" and then %d deferred successor(s) from the buffer", res.Drained)
			}
		case projection.Duplicate:
			note = " (seen before: acknowledged, nothing changed)"
		}
		d.say("%-8s v%d %-27s %s%s", e.Stream, e.StreamVersion, e.Type, res.Outcome, note)
	}
	cs, err := shipping.Stats(ctx)
	if err != nil {
		return err
	}
	d.say("%d deliveries: %d applied, %d deferred then drained, %d duplicates; %d still deferred",
		len(deliveries), cs.Applied, counts[projection.Deferred], cs.Duplicates, cs.Deferred)
	for _, o := range []string{"order-1", "order-2"} {
		status, err := d.shippingStatus(ctx, o)
		if err != nil {
			return err
		}
		d.say("shipping's view of %s: %s", o, status)
	}
	return nil
}

// fetchAll reads n messages from the start of the stream.
func fetchAll(ctx context.Context, js jetstream.JetStream, n int) ([]envelope.Event, error) {
	cons, err := js.OrderedConsumer(ctx, natsjs.DefaultStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	var out []envelope.Event
	for len(out) < n {
		batch, err := cons.Fetch(n-len(out), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		got := 0
		for m := range batch.Messages() {
			e, err := natsjs.DecodeMessage(m, 0)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
			got++
		}
		if got == 0 {
			return nil, fmt.Errorf("JetStream holds %d of the %d published events", len(out), n)
		}
	}
	return out, nil
}

func (d *demo) shippingConsumer(ctx context.Context) (*projection.Consumer, error) {
	if err := d.s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS demo_shipping_orders (tenant TEXT, order_id TEXT, status TEXT, version INTEGER, PRIMARY KEY (tenant, order_id))`)
		return err
	}); err != nil {
		return nil, err
	}
	statusOf := map[string]string{"order.placed": "placed", "order.paid": "paid: ship it", "order.reservation_rejected": "on hold", "order.cancelled": "cancelled: do not ship"}
	return projection.NewConsumer(d.s, projection.ConsumerOptions{
		Name:   "demo_shipping",
		Logger: d.c.log,
		Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
			status, ok := statusOf[e.Type]
			if !ok {
				return fmt.Errorf("%w: %s", projection.ErrUninterpretable, e.Type)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO demo_shipping_orders AS t (tenant, order_id, status, version) VALUES (?, ?, ?, ?)
				ON CONFLICT (tenant, order_id) DO UPDATE SET status = excluded.status, version = excluded.version`, e.Tenant, e.Stream, status, e.StreamVersion)
			return err
		},
	})
}

func (d *demo) shippingStatus(ctx context.Context, order string) (string, error) {
	var status string
	var version int64
	err := d.s.Update(ctx, func(tx *store.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT status, version FROM demo_shipping_orders WHERE tenant = 'default' AND order_id = ?`, order).Scan(&status, &version)
	})
	return fmt.Sprintf("%s (version %d)", status, version), err
}

func (d *demo) replay(ctx context.Context) error {
	d.title("A replay rebuilds the catalog and proves it caught up")
	r, err := projection.NewRunner(d.s, projection.Catalog(), &projection.RunnerOptions{Logger: d.c.log})
	if err != nil {
		return err
	}
	if _, err := r.CatchUp(ctx); err != nil {
		return err
	}
	res, err := replay.Rebuild(ctx, d.s, projection.Catalog(), &replay.Options{FromScratch: true, Logger: d.c.log})
	if err != nil {
		return err
	}
	d.say("watermark: position %d, the log head when the rebuild started", res.Watermark)
	d.say("the shadow reached it with %d events applied, the number of events in the log up to it", res.Applied)
	d.say("swapped in atomically at checkpoint %d (readers saw the old catalog or the new one, never a mix)", res.Checkpoint)
	return nil
}

func (d *demo) effect(ctx context.Context) error {
	d.title("An external effect, recorded once in the effect ledger")
	calls := 0
	send := func(context.Context) (string, error) {
		calls++
		return fmt.Sprintf("mail-%d", calls), nil
	}
	e, err := effect.For(d.s).Run(ctx, "default", "confirmation-email:order-2", send)
	if err != nil {
		return err
	}
	d.say("confirmation email for order-2: %s, provider reference %s", e.State, e.ProviderRef)
	e, err = effect.For(d.s).Run(ctx, "default", "confirmation-email:order-2", send)
	if err != nil {
		return err
	}
	d.say("the same effect key again (a redelivery, a restart): %s already, the email went out %d time(s)", e.State, calls)
	return nil
}

func (d *demo) doctor(ctx context.Context) error {
	d.title("doctor: reconciliation finds nothing left over")
	fs, err := d.s.Diagnose(ctx, store.DiagnoseOptions{OnDemand: []string{projection.CatalogName}})
	if err != nil {
		return err
	}
	problems := 0
	for _, f := range fs {
		if f.Severity == store.SeverityProblem {
			problems++
			d.say("problem: %s (%d): %v", f.Kind, f.Count, f.IDs)
		}
	}
	if problems > 0 {
		return fmt.Errorf("doctor found %d problem(s) the demo should have resolved", problems)
	}
	d.say("healthy: no event waits to be published, no lease is held, nothing is deferred, quarantined or in conflict")
	return nil
}
