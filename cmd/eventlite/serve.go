package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
)

var serveCommand = &command{
	name:    "serve",
	summary: "serve the store over HTTP (CloudEvents HTTP binding) for any language",
	usage:   "eventlite serve [--addr HOST:PORT] [--token SECRET=TENANT[:ro]]... [--tokens-file FILE] [--cors-origin ORIGIN]...",
	about: `Serves the database over HTTP: append CloudEvents in binary, structured or
batch mode, read streams and the tenant's log as batches, JSON Lines or live
(Server-Sent Events), with ETag preconditions and Idempotency-Key; list
effects (GET /v1/tenants/T/effects[?awaiting=true], as 'eventlite effects
list --json' prints them) and approve or reject those that wait for a
person (POST .../effects/KEY/approve {"args_hash","by"}, .../reject
{"by","reason"}, Content-Type application/json, by required). The API,
its headers, statuses and problems are in docs/http.md; /openapi.json
describes it.

After binding, and before any other output, it prints one line on stdout:
http:// and the bound address (so --addr 127.0.0.1:0 tells the port it got):
  http://127.0.0.1:7777
SIGINT or SIGTERM: it stops accepting, finishes the requests in flight, ends
live streams and exits 0.

Without tokens it serves every tenant, on a loopback address only (judged on
the bound IP): any other address exits 2, asking for a token. With tokens
(--token, repeatable, or --tokens-file: one SECRET=TENANT[:ro] per line, #
comments), every path but /healthz, /openapi.json and the web page's own
(/, /ui/...) needs "Authorization: Bearer SECRET" (or the page's session
cookie); TENANT * means every tenant (and the store-wide paths /metrics,
/v1/consumers, /v1/doctor, /v1/stats), :ro read-only.
Tokens are compared in constant time and never logged.

CORS is off unless --cors-origin names an allowed origin (repeatable, * for
any).

The web page: open the printed address in a browser. It is served from the
binary (no build step, nothing loaded from elsewhere, works offline) and
uses the API only: overview (counts, sizes, appends per second), streams,
one stream live with pause and resume, one event with its correlation and
cause, a live tail of the log with type and stream filters, an append form
that shows the request, the response and the curl command, consumers
(projections, relay backlog, dead letters with retry), health (doctor),
and a tenant switcher for a * token. With tokens it asks for one and
exchanges it (POST /ui/session) for an HttpOnly, SameSite=Strict session
cookie; the token never appears in a URL. A change made with the cookie
must come from the page itself (Sec-Fetch-Site: same-origin, or the
server's Origin), else 403 cross-site; without tokens, a write that a
browser marks as cross-site is refused too, unless --cors-origin allows
its origin.`,
	new: func() runner { return &serveCmd{} },
}

type serveCmd struct {
	addr       string
	tokens     []serve.Token
	tokensFile string
	origins    []string
}

func (s *serveCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.addr, "addr", "127.0.0.1:7777", "listen on `HOST:PORT` (port 0: any free port)")
	fs.Func("token", "accept bearer token `SECRET=TENANT[:ro]` (repeatable; TENANT * is every tenant, :ro read-only)", func(v string) error {
		t, err := serve.ParseToken(v)
		if err != nil {
			return err
		}
		s.tokens = append(s.tokens, t)
		return nil
	})
	fs.StringVar(&s.tokensFile, "tokens-file", "", "read tokens from `FILE`, one SECRET=TENANT[:ro] per line, # comments")
	fs.Func("cors-origin", "allow browser calls from `ORIGIN` (repeatable; * for any)", func(v string) error {
		s.origins = append(s.origins, v)
		return nil
	})
}

func (s *serveCmd) run(ctx context.Context, c *cli, _ []string) error {
	tokens := s.tokens
	if s.tokensFile != "" {
		f, err := os.Open(s.tokensFile)
		if err != nil {
			return &usageError{cmd: serveCommand, err: fmt.Errorf("--tokens-file: %w", err)}
		}
		ts, err := serve.ParseTokens(f)
		f.Close()
		if err != nil {
			return &usageError{cmd: serveCommand, err: fmt.Errorf("--tokens-file %s: %w", s.tokensFile, err)}
		}
		tokens = append(tokens, ts...)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return &usageError{cmd: serveCommand, err: fmt.Errorf("--addr %s: %w", s.addr, err)}
	}
	defer ln.Close()
	if len(tokens) == 0 {
		if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
			return &usageError{cmd: serveCommand, err: fmt.Errorf("--addr %s binds %s, which is not a loopback address: without tokens eventlite serves every tenant to anyone who can connect; add --token SECRET=TENANT (or --tokens-file), or listen on 127.0.0.1", s.addr, ln.Addr())}
		}
	}
	return c.withStore(ctx, true, func(st *store.Store) error {
		if err := requireMasterKey(ctx, st, "serve"); err != nil {
			return err
		}
		h, err := serve.New(st, &serve.Options{Tokens: tokens, CORSOrigins: s.origins, Logger: c.log.Named("serve"), Propagator: propagation.TraceContext{}})
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: c.log.StandardLogger(nil)}
		if _, err := fmt.Fprintf(c.stdout, "http://%s\n", ln.Addr()); err != nil {
			return err
		}
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(ln) }()
		select {
		case err := <-errc:
			_ = h.Close()
			return err
		case <-ctx.Done():
		}
		// Stop accepting, end live streams, finish the requests in flight.
		go func() { _ = h.Close() }()
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = srv.Shutdown(sctx)
		_ = h.Close()
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return err
	})
}
