package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store/effect"
	"github.com/eventlite/eventlite/store/storetest"
)

// effects list --json and GET /v1/tenants/{t}/effects send the same bytes
// for every effect, args and args_hash included (arguments with
// characters that encoding/json escapes by default).
func TestEffectsListSameOverHTTP(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	s := storetest.MustOpenPath(t, db, nil)
	call := func(context.Context, json.RawMessage) (string, error) { return "ref", nil }
	for i, args := range []any{map[string]any{"note": "<late> & \"damaged\" \u2028✓", "amount": 1250}, nil, []int{3, 1}} {
		r := effect.Intent{Tenant: "default", Key: "k" + string(rune('0'+i)), Resource: "order/<o-1>", Summary: "refund & <notify>",
			RequestedBy: "bot", NeedsApproval: true, Args: args}
		if _, err := effect.For(s).Do(ctx, r, call); !errors.Is(err, effect.ErrAwaitingApproval) {
			t.Fatal(err)
		}
	}
	if _, err := effect.For(s).Run(ctx, "default", "email:1", func(context.Context) (string, error) { return "m<1>", nil }); err != nil {
		t.Fatal(err)
	}
	h, err := serve.New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Close(); srv.Close() })

	for _, awaiting := range []bool{false, true} {
		args, query := []string{"effects", "list", "--json", "--db", db}, ""
		if awaiting {
			args, query = append(args, "--awaiting"), "?awaiting=true"
		}
		r := run(t, "", args...)
		if r.code != exitOK {
			t.Fatalf("effects list: exit %d: %s", r.code, r.stderr)
		}
		cli := lines(r.stdout)
		res, err := http.Get(srv.URL + "/v1/tenants/default/effects" + query)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("GET: %d %s %v", res.StatusCode, b, err)
		}
		var body struct{ Effects []json.RawMessage }
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 4, true: 3}[awaiting]; len(cli) != want || len(body.Effects) != want {
			t.Fatalf("awaiting %v: %d lines, %d over HTTP, want %d", awaiting, len(cli), len(body.Effects), want)
		}
		for i := range cli {
			if cli[i] != string(body.Effects[i]) {
				t.Errorf("effect %d:\nCLI  %s\nHTTP %s", i, cli[i], body.Effects[i])
			}
		}
	}
}
