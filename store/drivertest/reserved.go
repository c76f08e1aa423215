package drivertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/internal/outboxmark"
	"github.com/eventlite/eventlite/internal/projrow"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
	"github.com/eventlite/eventlite/store/lifecycle"
	"github.com/eventlite/eventlite/store/outbox"
)

// testOwnStreamsAreTheStores: a user cannot append to, delete, truncate
// or give a retention policy to a stream of the store's own (an id
// starting with "eventlite-"), through the store or inside an Update;
// each is a *ReservedStreamError (also ErrInvalidEvent) that stores
// nothing, and forget still writes its stream.
func testOwnStreamsAreTheStores(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, &store.Options{MasterKey: MasterKey(t, 11)})
	if _, err := s.Append(ctx, "default", "user-1", store.Any, Personal(t, "alice", "a@x")); err != nil {
		t.Fatal(err)
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	want := func(what string, err error) {
		t.Helper()
		var re *store.ReservedStreamError
		if !errors.As(err, &re) || !errors.Is(err, store.ErrReservedStream) || !errors.Is(err, store.ErrInvalidEvent) {
			t.Errorf("%s: %v, want *ReservedStreamError", what, err)
		}
	}
	ev := envelope.Event{Source: "/test", Type: "t.user"}
	for _, stream := range []string{erasure.ForgottenStream, "eventlite-other"} {
		_, err := s.Append(ctx, "default", stream, store.Any, ev)
		want("append to "+stream, err)
		err = s.Update(ctx, func(tx *store.Tx) error {
			_, err := tx.Append(ctx, "default", stream, store.Any, ev)
			return err
		})
		want("tx.Append to "+stream, err)
	}
	_, err := lifecycle.For(s).Delete(ctx, "default", erasure.ForgottenStream, lifecycle.DeleteOptions{Hard: true})
	want("hard delete", err)
	_, err = lifecycle.For(s).Delete(ctx, "default", erasure.ForgottenStream, lifecycle.DeleteOptions{})
	want("delete", err)
	_, err = lifecycle.For(s).Truncate(ctx, "default", erasure.ForgottenStream, 2, store.Any)
	want("truncate", err)
	err = s.Update(ctx, func(tx *store.Tx) error {
		_, err := lifecycle.For(s).DeleteTx(ctx, tx, "default", erasure.ForgottenStream, lifecycle.DeleteOptions{Hard: true})
		return err
	})
	want("DeleteTx", err)
	err = lifecycle.For(s).SetRetention(ctx, lifecycle.RetentionPolicy{Prefix: "eventlite-", MaxCount: 1})
	want("retention policy", err)
	if ps, err := lifecycle.For(s).Retention(ctx); err != nil || len(ps) != 0 {
		t.Errorf("policies after the refusal: %v %v", ps, err)
	}
	if evs := ReadStream(t, s, "default", erasure.ForgottenStream); len(evs) != 1 || evs[0].Type != erasure.TypeSubjectForgotten {
		t.Errorf("the store's own stream after the refusals: %+v", evs)
	}
	// The store still writes it.
	if _, err := s.Append(ctx, "default", "user-2", store.Any, Personal(t, "bob", "b@x")); err != nil {
		t.Fatal(err)
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "bob"); err != nil {
		t.Fatalf("forget after the refusals: %v", err)
	}
}

// testForgetErasesErrorTexts: the error texts the store keeps for a
// subject's events (the relay's last error of its outbox rows, a
// quarantined copy's error), which a sink's reply or a handler may have
// filled with the event's data, are erased by Forget; another subject's
// are kept.
func testForgetErasesErrorTexts(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.Open(t, &store.Options{MasterKey: MasterKey(t, 13)})
	var events []envelope.Event
	for _, who := range []string{"alice", "bob"} {
		r, err := s.Append(ctx, "default", "user-"+who, store.Any, Personal(t, who, who+"@secret.example"))
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, r.Events[0])
	}
	lease, err := store.Inner(inside.Key{}, s).AcquireLease(ctx, "relay", "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	echo := func(e envelope.Event) string {
		return "POST http://sink/: HTTP 422: the sink said: " + string(e.Data) + " is not acceptable"
	}
	err = s.Update(ctx, func(tx *store.Tx) error {
		var fails []outboxmark.Failure
		for _, e := range events {
			fails = append(fails, outboxmark.Failure{Position: e.Position, Error: echo(e), NextAttemptAt: time.Now().Add(time.Hour)})
			if err := store.Bookkeeping(inside.Key{}, tx).Quarantine(ctx, projrow.Quarantined{Consumer: "p", Reason: string(projection.ReasonHandlerError), Tenant: "default", EventID: e.ID,
				Position: e.Position, Event: e.AppendJSON(nil), Error: "handler: " + string(e.Data)}); err != nil {
				return err
			}
		}
		return store.Bookkeeping(inside.Key{}, tx).RecordFailure(ctx, lease, fails)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := erasure.For(s).Forget(ctx, "default", "alice"); err != nil {
		t.Fatal(err)
	}
	entries, err := outbox.For(s).Entries(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := projection.Quarantine(s).Events(ctx, projection.QuarantineFilter{})
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for _, e := range entries {
		if e.EventID == events[0].ID || e.EventID == events[1].ID {
			texts["outbox "+e.EventID] = e.LastError
		}
	}
	for _, q := range qs {
		texts["quarantine "+q.EventID] = q.Error
	}
	if len(texts) != 4 {
		t.Fatalf("error texts %v, want the outbox's and the quarantine's of both events", texts)
	}
	for what, text := range texts {
		alice := strings.HasSuffix(what, events[0].ID)
		switch {
		case alice && (strings.Contains(text, "alice@secret") || !strings.Contains(text, "erased")):
			t.Errorf("%s of the forgotten subject: %q, want it erased", what, text)
		case !alice && !strings.Contains(text, "bob@secret"):
			t.Errorf("%s of another subject: %q, want it kept", what, text)
		}
	}
}

// testOneMasterKeyPerStore: a store uses one master key. Once it holds
// data keys, a store opened with another master key is refused
// (*StoreMasterKeyError, ErrMasterKey); one opened with another key
// before any data key existed has its append that would create a key
// under it refused, nothing stored, while its plain appends go on.
func testOneMasterKeyPerStore(t *testing.T, h Harness) {
	ctx := context.Background()
	a := h.Open(t, &store.Options{MasterKey: MasterKey(t, 14)})
	b := h.reopen(t, a, &store.Options{MasterKey: MasterKey(t, 15)}) // opened while no data key exists
	if _, err := a.Append(ctx, "default", "user-alice", store.Any, Personal(t, "alice", "a@x")); err != nil {
		t.Fatal(err)
	}
	_, err := b.Append(ctx, "default", "user-bob", store.Any, Personal(t, "bob", "b@x"))
	var me *store.StoreMasterKeyError
	if !errors.As(err, &me) || !errors.Is(err, store.ErrMasterKey) {
		t.Fatalf("an append creating a data key under a second master key: %v, want *StoreMasterKeyError", err)
	}
	if _, err := b.Append(ctx, "default", "plain", store.Any, envelope.Event{Source: "/t", Type: "t.plain"}); err != nil {
		t.Fatalf("a plain append of the store with the other key: %v", err)
	}
	if evs := ReadStream(t, a, "default", "plain"); len(evs) != 1 {
		t.Fatalf("plain stream: %d events", len(evs))
	}
	for _, err := range a.ReadStream(ctx, "default", "user-bob", store.ReadStreamOptions{}) {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the refused append stored something: %v", err)
		}
		break
	}
	// A process that opens now, with the other key, is refused at Open.
	c, err := store.Open(ctx, a.Path(), &store.Options{MasterKey: MasterKey(t, 15)})
	if err == nil {
		c.Close()
	}
	if !errors.As(err, &me) || !errors.Is(err, store.ErrMasterKey) {
		t.Errorf("open with another master key than the store's: %v, want *StoreMasterKeyError", err)
	}
}
