package store_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/outbox"
)

// closedArg returns an argument of type t for a call on a closed store:
// one that passes every method's validation, so that only the closed
// store can fail the call.
func closedArg(t *testing.T, typ reflect.Type) reflect.Value {
	switch {
	case typ == reflect.TypeFor[context.Context]():
		return reflect.ValueOf(context.Background())
	case typ == reflect.TypeFor[envelope.Event]():
		return reflect.ValueOf(cancelEvent(t, 1))
	case typ == reflect.TypeFor[time.Duration]():
		return reflect.ValueOf(time.Second)
	case typ == reflect.TypeFor[time.Time]():
		return reflect.ValueOf(time.Now())
	case typ == reflect.TypeFor[store.Lease]():
		return reflect.ValueOf(store.Lease{Resource: "relay", Owner: "me", Token: 1})
	case typ == reflect.TypeFor[effect.Intent]():
		return reflect.ValueOf(effect.Intent{Tenant: "default", Key: "k"})
	case typ == reflect.TypeFor[effect.Approval]():
		return reflect.ValueOf(effect.Approval{Tenant: "default", Key: "k", ArgsHash: "null", By: "alice"})
	case typ == reflect.TypeFor[effect.Rejection]():
		return reflect.ValueOf(effect.Rejection{Tenant: "default", Key: "k", By: "bob"})
	}
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.String:
		v.SetString("default")
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Slice: // one element: an empty batch returns at once
		v = reflect.MakeSlice(typ, 1, 1)
		v.Index(0).Set(closedArg(t, typ.Elem()))
	case reflect.Func:
		v = reflect.MakeFunc(typ, func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, typ.NumOut())
			for i := range out {
				out[i] = reflect.Zero(typ.Out(i))
			}
			return out
		})
	}
	return v
}

// TestClosedStore: once closed, every method of the store that takes a
// ctx fails with an error matching ErrClosed (reads said "sql: database
// is closed"), Close again returns nil, and Changed and Done return
// closed channels. The methods, the handles' included, are found by
// reflection, so a method added later is checked too.
func TestClosedStore(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, t.TempDir()+"/closed.db", &store.Options{Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	var stale *store.Tx
	if err := s.Update(ctx, func(tx *store.Tx) error { stale = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	changed := s.Changed()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close again (%d): %v, want nil", i+2, err)
		}
	}
	for name, ch := range map[string]<-chan struct{}{"Changed before Close": changed, "Changed": s.Changed(), "Done": s.Done()} {
		select {
		case <-ch:
		default:
			t.Errorf("%s: channel not closed after Close", name)
		}
	}

	checked := 0
	var check func(name string, sv reflect.Value)
	check = func(name string, sv reflect.Value) {
		st := sv.Type()
		for i := range st.NumMethod() {
			m := st.Method(i)
			mt := m.Type // receiver first
			if mt.NumIn() == 1 && mt.NumOut() == 1 && mt.Out(0).Kind() == reflect.Pointer {
				// A handle (s.Inventory(), ...): its methods too.
				check(name+"."+m.Name+"()", sv.Method(i).Call(nil)[0])
				continue
			}
			if mt.NumIn() < 2 || mt.In(1) != reflect.TypeFor[context.Context]() || m.Name == "QueryRowContext" {
				continue // QueryRowContext's *sql.Row: checked below, through Scan
			}
			args := []reflect.Value{}
			for j := 1; j < mt.NumIn(); j++ {
				in := mt.In(j)
				switch {
				case in == reflect.TypeFor[*store.Tx]():
					args = append(args, reflect.ValueOf(stale))
				case mt.IsVariadic() && j == mt.NumIn()-1:
					args = append(args, closedArg(t, in.Elem()))
				default:
					args = append(args, closedArg(t, in))
				}
			}
			err := callErr(sv.Method(i).Call(args))
			checked++
			if !errors.Is(err, store.ErrClosed) {
				t.Errorf("%s.%s on a closed store: %v, want an error matching ErrClosed", name, m.Name, err)
			} else if strings.Contains(err.Error(), "sql:") {
				t.Errorf("%s.%s on a closed store: %q still says what database/sql said", name, m.Name, err)
			}
		}
	}
	check("Store", reflect.ValueOf(s))
	// The handles of the packages under store/.
	check("effect.For(s)", reflect.ValueOf(effect.For(s)))
	check("outbox.For(s)", reflect.ValueOf(outbox.For(s)))
	check("stale Tx", reflect.ValueOf(stale))
	// What eventlite's packages call behind the internal boundary.
	check("stale Tx bookkeeping", reflect.ValueOf(store.Bookkeeping(inside.Key{}, stale)))
	check("effect.Steps", reflect.ValueOf(effect.Steps(inside.Key{}, effect.For(s))))
	t.Logf("%d methods checked", checked)

	for name, f := range map[string]func() error{
		"Tx.ExecContext": func() error { _, err := stale.ExecContext(ctx, `SELECT 1`); return err },
		"Tx.QueryContext": func() error {
			_, err := stale.QueryContext(ctx, `SELECT 1`)
			return err
		},
		"Tx.QueryRowContext": func() error { var n int; return stale.QueryRowContext(ctx, `SELECT 1`).Scan(&n) },
	} {
		if err := f(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s of a stale Tx on a closed store: %v, want an error matching ErrClosed", name, err)
		}
	}
}

// callErr returns the error a method call reported: its last result, or
// the first error its iterator (an iter.Seq2[T, error]) yields.
func callErr(out []reflect.Value) error {
	if len(out) == 0 {
		return nil
	}
	last := out[len(out)-1]
	if err, ok := last.Interface().(error); ok || last.Type() == reflect.TypeFor[error]() {
		return err
	}
	seq := out[0]
	if seq.Kind() != reflect.Func || seq.Type().NumIn() != 1 {
		return nil
	}
	var got error
	yield := reflect.MakeFunc(seq.Type().In(0), func(args []reflect.Value) []reflect.Value {
		if err, ok := args[len(args)-1].Interface().(error); ok && err != nil {
			got = err
		}
		return []reflect.Value{reflect.ValueOf(false)}
	})
	seq.Call([]reflect.Value{yield})
	return got
}
