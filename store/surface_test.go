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
	"path/filepath"
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
		"InboxInsert":   `tx.InboxInsert(ctx, nil)`,
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
	check := func(src string) []error { return typeCheck(t, imp, src) }
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

// TestLeasesAreNotPublic type-checks code an application could write: a
// handler (or any code holding the Store) that takes, renews or releases
// a lease, which would let it steal the relay's or a projection's lease.
// Each must fail to compile with an error naming the method; the control,
// listing the leases as an operator does, must compile.
func TestLeasesAreNotPublic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	imp := exportImporter(t, "github.com/eventlite/eventlite/store", "github.com/eventlite/eventlite/projection", "github.com/eventlite/eventlite/envelope")
	const head = "package app\n\nimport (\n\t\"context\"\n\t\"time\"\n\n\t\"github.com/eventlite/eventlite/envelope\"\n\t\"github.com/eventlite/eventlite/projection\"\n\t\"github.com/eventlite/eventlite/store\"\n)\n\nvar _ time.Duration\n\n"
	handler := `func handler(s *store.Store) projection.Projection {
	return projection.Projection{Name: "p", Apply: func(ctx context.Context, tx *projection.Tx, e envelope.Event) error {
		CALL
		return nil
	}}
}
`
	control := head + strings.Replace(handler, "CALL", `_, err := s.Leases().List(ctx)
		return err`, 1)
	if errs := typeCheck(t, imp, control); len(errs) > 0 {
		t.Errorf("the control listing the leases does not compile: %v", errs)
	}
	for method, call := range map[string]string{
		"Acquire": `_, _ = s.Leases().Acquire(ctx, "relay", "thief", time.Hour)`,
		"Renew":   `_, _ = s.Leases().Renew(ctx, store.Lease{Resource: "relay", Owner: "thief", Token: 1, TTL: time.Hour})`,
		"Release": `_ = s.Leases().Release(ctx, store.Lease{Resource: "relay", Owner: "relay-1", Token: 1})`,
	} {
		errs := typeCheck(t, imp, head+strings.Replace(handler, "CALL", call, 1))
		t.Logf("a handler calling Leases().%s: %v", method, errs)
		named := false
		for _, err := range errs {
			if strings.Contains(err.Error(), "Leases()."+method+" undefined") {
				named = true
			}
		}
		if !named {
			t.Errorf("a handler calling Leases().%s compiled or failed for another reason (%v): an application can take or steal a worker's lease", method, errs)
		}
	}
}

// TestTheKeyCannotBeForged type-checks, in a package of another module's
// path, calls of the boundary's openers with a struct literal in place of
// inside.Key: each must fail to compile, since a Key whose underlying type
// could be spelled outside would open the bookkeeping to any program.
func TestTheKeyCannotBeForged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	imp := exportImporter(t, "github.com/eventlite/eventlite/store", "github.com/eventlite/eventlite/projection", "github.com/eventlite/eventlite/store/effect")
	const head = "package app\n\nimport (\n\t\"github.com/eventlite/eventlite/projection\"\n\t\"github.com/eventlite/eventlite/store\"\n\t\"github.com/eventlite/eventlite/store/effect\"\n)\n\nvar _ projection.Tx\nvar _ store.Tx\nvar _ effect.Ledger\n\n"
	forged := map[string]string{
		"store.Bookkeeping":        `var _ = store.Bookkeeping(struct{}{}, nil)`,
		"store.Inner":              `var _ = store.Inner(struct{}{}, nil)`,
		"effect.Steps":             `var _ = effect.Steps(struct{}{}, nil)`,
		"projection.Rebuilding":    `var _ = projection.Rebuilding(struct{}{}, nil)`,
		"projection.ConsumerParts": `var _, _ = projection.ConsumerParts(struct{}{}, nil)`,
		"a blank field":            `var _ = store.Bookkeeping(struct{ _ struct{} }{}, nil)`,
	}
	for name, call := range forged {
		errs := typeCheck(t, imp, head+call+"\n")
		t.Logf("%s with a forged key: %v", name, errs)
		refused := false
		for _, err := range errs {
			if strings.Contains(err.Error(), "cannot use struct") {
				refused = true
			}
		}
		if !refused {
			t.Errorf("%s accepted a struct literal for inside.Key (%v): a program outside eventlite can open the bookkeeping", name, errs)
		}
	}
}

// maxStoreExports is the most identifiers package store may export,
// counted as countExports does. It holds the count this package reached
// once backup, restore, copy and inspect left for store/backup, the
// effect ledger for store/effect, erasure's public face for store/erasure,
// the lifecycle jobs for store/lifecycle, the outbox for store/outbox,
// and the external consumers' ledger and the projection records (status,
// quarantine, rebuilds, holes) for package projection; docs/design.md
// says why it is not yet 150 and records every change to it.
const maxStoreExports = 169

// TestStorePackageExportsStayCapped counts what package store exports:
// top-level identifiers plus the exported methods of exported types,
// test files excluded. It prints the count, with the length of `go doc
// ./store` and `go doc ./store Tx`.
func TestStorePackageExportsStayCapped(t *testing.T) {
	n, detail := countExports(t, ".")
	t.Logf("package store exports %d identifiers (at most %d): %s", n, maxStoreExports, detail)
	if n > maxStoreExports {
		t.Errorf("package store exports %d identifiers, at most %d: put a feature's API on a handle or in a package of its own (%s)", n, maxStoreExports, detail)
	}
	if testing.Short() {
		return
	}
	for _, c := range []struct {
		args []string
		max  int
	}{
		{[]string{"doc", "."}, maxStoreDocLines},
		{[]string{"doc", ".", "Tx"}, maxTxDocLines},
	} {
		out, err := exec.Command("go", c.args...).Output()
		if err != nil {
			t.Fatalf("go %v: %v", c.args, err)
		}
		n := strings.Count(string(out), "\n")
		t.Logf("go %s: %d lines (at most %d)", strings.Join(c.args, " "), n, c.max)
		if n > c.max {
			t.Errorf("go %s prints %d lines, at most %d: keep the package comment (doc.go) and Tx's comment (tx.go) short and point to docs/, and put new API in a package of its own", strings.Join(c.args, " "), n, c.max)
		}
	}
}

// maxStoreDocLines is the most lines `go doc ./store` may print: the
// package comment (doc.go) points to docs/, and each exported name is a
// line of the listing.
const maxStoreDocLines = 150

// maxTxDocLines is the most lines `go doc ./store Tx` may print: Tx's
// comment and its methods fit on a screen.
const maxTxDocLines = 30

// countExports counts the exported identifiers of the package in dir:
// exported types, functions, constants and variables, and the exported
// methods of exported types, test files excluded.
func countExports(t *testing.T, dir string) (int, string) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	exportedType := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, sp := range g.Specs {
					if ts := sp.(*ast.TypeSpec); ts.Name.IsExported() {
						exportedType[ts.Name.Name] = true
					}
				}
			}
		}
	}
	var methods, typs, consts, vars, funcs int
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					funcs++
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok && exportedType[id.Name] {
					methods++
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						if sp.Name.IsExported() {
							typs++
						}
					case *ast.ValueSpec:
						for _, name := range sp.Names {
							switch {
							case !name.IsExported():
							case d.Tok == token.CONST:
								consts++
							default:
								vars++
							}
						}
					}
				}
			}
		}
	}
	return methods + typs + consts + vars + funcs, fmt.Sprintf("%d methods, %d types, %d constants, %d variables, %d functions", methods, typs, consts, vars, funcs)
}

// TestEffectStepsAreNotPublic: an application runs effects with
// effect.Ledger's Do, Run and ResumeApproved and decides them with
// Approve and Reject, which take a params struct; the state machine's
// steps do not compile outside eventlite, and no effect call is left on
// *store.Store.
func TestEffectStepsAreNotPublic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go tool")
	}
	imp := exportImporter(t, "github.com/eventlite/eventlite/store", "github.com/eventlite/eventlite/store/effect")
	const head = "package app\n\nimport (\n\t\"context\"\n\n\t\"github.com/eventlite/eventlite/store\"\n\t\"github.com/eventlite/eventlite/store/effect\"\n)\n\nfunc f(ctx context.Context, s *store.Store) {\n\tef := effect.For(s)\n\t"
	control := head + `_, _ = ef.Run(ctx, "t", "k", func(context.Context) (string, error) { return "", nil })
	_, _ = ef.Approve(ctx, effect.Approval{Tenant: "t", Key: "k", ArgsHash: "h", By: "alice"})
	_, _ = ef.Reject(ctx, effect.Rejection{Tenant: "t", Key: "k", Reason: "no", By: "bob"})
}
`
	if errs := typeCheck(t, imp, control); len(errs) > 0 {
		t.Errorf("the control calling Run, Approve and Reject does not compile: %v", errs)
	}
	for _, call := range []string{
		`ef.Reserve(ctx, "t", "k")`,
		`ef.Begin(ctx, "t", "k")`,
		`ef.Complete(ctx, "t", "k", "ref")`,
		`ef.Fail(ctx, "t", "k", "reason")`,
		`ef.MarkUnknown(ctx, "t", "k", "reason")`,
		`ef.Approve(ctx, "t", "k", "hash", "alice")`,
		`ef.Reject(ctx, "t", "k", "reason", "bob")`,
		`s.Effects()`,
	} {
		errs := typeCheck(t, imp, head+call+"\n}\n")
		t.Logf("%s: %v", call, errs)
		method := call[strings.Index(call, ".")+1 : strings.Index(call, "(")]
		named := false
		for _, err := range errs {
			if strings.Contains(err.Error(), method) {
				named = true
			}
		}
		if !named {
			t.Errorf("%s compiled or failed for another reason (%v)", call, errs)
		}
	}
}

// typeCheck type-checks src (one file of package app) and returns its
// errors.
func typeCheck(t *testing.T, imp types.Importer, src string) []error {
	t.Helper()
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
