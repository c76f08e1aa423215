package drivertest

import (
	"context"
	"errors"
	"testing"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
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
	if _, err := s.Erasure().Forget(ctx, "default", "alice"); err != nil {
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
	for _, stream := range []string{store.ForgottenStream, "eventlite-other"} {
		_, err := s.Append(ctx, "default", stream, store.Any, ev)
		want("append to "+stream, err)
		err = s.Update(ctx, func(tx *store.Tx) error {
			_, err := tx.Append(ctx, "default", stream, store.Any, ev)
			return err
		})
		want("tx.Append to "+stream, err)
	}
	_, err := s.Lifecycle().Delete(ctx, "default", store.ForgottenStream, store.DeleteOptions{Hard: true})
	want("hard delete", err)
	_, err = s.Lifecycle().Delete(ctx, "default", store.ForgottenStream, store.DeleteOptions{})
	want("delete", err)
	_, err = s.Lifecycle().Truncate(ctx, "default", store.ForgottenStream, 2, store.Any)
	want("truncate", err)
	err = s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.DeleteStream(ctx, "default", store.ForgottenStream, store.DeleteOptions{Hard: true})
		return err
	})
	want("tx.DeleteStream", err)
	err = s.Lifecycle().SetRetention(ctx, store.RetentionPolicy{Prefix: "eventlite-", MaxCount: 1})
	want("retention policy", err)
	if ps, err := s.Lifecycle().Retention(ctx); err != nil || len(ps) != 0 {
		t.Errorf("policies after the refusal: %v %v", ps, err)
	}
	if evs := ReadStream(t, s, "default", store.ForgottenStream); len(evs) != 1 || evs[0].Type != store.TypeSubjectForgotten {
		t.Errorf("the store's own stream after the refusals: %+v", evs)
	}
	// The store still writes it.
	if _, err := s.Append(ctx, "default", "user-2", store.Any, Personal(t, "bob", "b@x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Erasure().Forget(ctx, "default", "bob"); err != nil {
		t.Fatalf("forget after the refusals: %v", err)
	}
}
