package store_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// maxStoreMethods is the most methods *Store may have: what `go doc
// ./store Store` lists fits on a screen. A new feature adds a handle (one
// accessor, its methods on the handle) or methods of *Tx, never Store
// methods.
const maxStoreMethods = 25

// maxTxMethods is the most methods *store.Tx may have: what a handler or
// an Update closure needs (the SQL calls, Nested, Dialect, TableExists,
// Append and the user's own writes), nothing of the store's bookkeeping.
const maxTxMethods = 12

// maxProjectionTxMethods is the most methods *projection.Tx may have: the
// SQL calls, Nested, Dialect, TableExists and Table.
const maxProjectionTxMethods = 14

func methodNames(t reflect.Type) []string {
	names := make([]string, t.NumMethod())
	for i := range names {
		names[i] = t.Method(i).Name
	}
	return names
}

// TestStoreMethodSetStaysSmall: *Store keeps what a service calls and
// accessors for the handles; the rest lives on the handles and on *Tx.
func TestStoreMethodSetStaysSmall(t *testing.T) {
	caps := []struct {
		typ reflect.Type
		max int
		fix string
	}{
		{reflect.TypeFor[*store.Store](), maxStoreMethods, "add a handle rather than a Store method"},
		{reflect.TypeFor[*store.Tx](), maxTxMethods, "what only eventlite's packages call belongs to store.Bookkeeping, not to Tx"},
		{reflect.TypeFor[*projection.Tx](), maxProjectionTxMethods, "a handler's transaction offers SQL on its own tables, nothing of the runner's"},
	}
	for _, c := range caps {
		names := methodNames(c.typ)
		t.Logf("%v: %d methods (at most %d): %s", c.typ, len(names), c.max, strings.Join(names, " "))
		if len(names) > c.max {
			t.Errorf("%v has %d methods, at most %d: %s (%v)", c.typ, len(names), c.max, c.fix, names)
		}
	}
}

// TestBookkeepingIsNotOnTheHandlersTx type-checks code an application
// could write: a projection handler, a consumer handler and an Update
// closure calling the store's bookkeeping on the Tx they receive. Each
// must fail to compile with an error naming the method; the control,
// calling what Tx offers, must compile.
func TestBookkeepingIsNotOnTheHandlersTx(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	imp := exportImporter(t, "github.com/eventlite/eventlite/store", "github.com/eventlite/eventlite/projection", "github.com/eventlite/eventlite/envelope")
	calls := map[string]string{
		"SetCheckpoint": `tx.SetCheckpoint(ctx, "other", 0, nil)`,
		"MarkPublished": `tx.MarkPublished(ctx, store.Lease{}, nil)`,
		"InboxInsert":   `tx.InboxInsert(ctx, store.InboxInsertParams{})`,
	}
	// Each snippet gets a call in place of CALL, on the Tx it receives.
	snippets := map[string]string{
		"Update closure": `func f(ctx context.Context, s *store.Store) error {
	return s.Update(ctx, func(tx *store.Tx) error {
		CALL
		return nil
	})
}`,
		"projection handler": `var p = projection.Projection{Name: "p", Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
	CALL
	return nil
}}`,
		"typed projection handler": `func f(h *projection.Handlers) {
	projection.On(h, func(ctx context.Context, tx *projection.Tx, e projection.Event[struct{}]) error {
		CALL
		return nil
	})
}`,
		"consumer handler": `var c = projection.ConsumerOptions{Apply: func(ctx context.Context, tx *store.Tx, e envelope.Event) error {
	CALL
	return nil
}}`,
	}
	const head = "package app\n\nimport (\n\t\"context\"\n\n\t\"github.com/eventlite/eventlite/envelope\"\n\t\"github.com/eventlite/eventlite/projection\"\n\t\"github.com/eventlite/eventlite/store\"\n)\n\nvar _ envelope.Event\nvar _ projection.Tx\nvar _ store.Tx\n\n"
	check := func(src string) []error {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "app.go", src, 0)
		if err != nil {
			t.Fatalf("parse:\n%s\n%v", src, err)
		}
		var errs []error
		conf := types.Config{Importer: imp, Error: func(err error) { errs = append(errs, err) }}
		_, _ = conf.Check("app", fset, []*ast.File{f}, nil)
		return errs
	}
	for where, snippet := range snippets {
		control := head + strings.Replace(snippet, "CALL", `_, _ = tx.ExecContext(ctx, "UPDATE t SET n = n + 1")
	_ = tx.Nested(ctx, func() error { return nil })
	_ = tx.Dialect()
	_, _ = tx.TableExists(ctx, "t")`, 1)
		if errs := check(control); len(errs) > 0 {
			t.Errorf("%s: the control calling what Tx offers does not compile: %v", where, errs)
		}
		for method, call := range calls {
			errs := check(head + strings.Replace(snippet, "CALL", call, 1))
			named := false
			for _, err := range errs {
				if strings.Contains(err.Error(), "tx."+method+" undefined") {
					named = true
				}
			}
			t.Logf("%s calling %s: %v", where, method, errs)
			if !named {
				t.Errorf("%s calling %s compiled or failed for another reason (%v): the store's bookkeeping is within a handler's reach", where, method, errs)
			}
		}
	}
}

// exportImporter imports packages from the export data the go tool
// builds for them (go list -export), so the type checker sees exactly
// what a program that imports them sees.
func exportImporter(t *testing.T, pkgs ...string) types.Importer {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list -export output: %v", err)
		}
		exports[p.ImportPath] = p.Export
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
}
