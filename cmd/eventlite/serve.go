package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/eventlite/eventlite/serve"
	"github.com/eventlite/eventlite/store"
)

var serveCommand = &command{
	name:    "serve",
	summary: "serve the store over HTTP (CloudEvents HTTP binding) for any language",
	usage: "eventlite serve [--addr HOST:PORT] [--token SECRET=TENANT[:ro]]... [--tokens-file FILE] [--cors-origin ORIGIN]...\n" +
		"                [--allow-host NAME]... [--shutdown-grace D] [--access-log]",
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
SIGINT or SIGTERM: it stops accepting, ends live streams, lets the requests
in flight finish for --shutdown-grace (default 30s), then closes the
connections still open, warns how many it cut (cut=N) and exits 0.

The Host rule (against DNS rebinding): only requests whose Host is
localhost, an IP address (127.0.0.1, [::1], any other) or a name given with
--allow-host NAME (repeatable) are answered, whatever the port; any other
Host gets 403 host-not-allowed before any handler, tokens or not.

Limits on clients: headers within 10s; a request body at 1024 bytes/s on
average after a 10s grace, with no pause over 10s (else 408
request-timeout); at most 64 MiB of request bodies held at once (else 503
busy with Retry-After); each response write taken within 10s; keep-alive
connections idle for 2m closed. Failed authentications (POST /ui/session
included) are limited per client address: 20, then one per second, beyond
that 429 too-many-failures with Retry-After; a valid token is never refused.

--access-log prints one JSON line per request on stdout after the address
line: time, method, route (the pattern: no stream id, event id or effect
key), status, bytes, duration_ms, tenant, and token_index and token_tenant
(the token's position in the token list and its tenant, never its secret);
no headers, no bodies.

Without tokens it serves every tenant, on a loopback address only (judged on
the bound IP): any other address exits 2, asking for a token. With tokens
(--token, repeatable, or --tokens-file: one SECRET=TENANT[:ro] per line, #
comments), every path but /healthz, /openapi.json and the web page's own
(/, /ui/...) needs "Authorization: Bearer SECRET" (or the page's session
cookie); TENANT * means every tenant (and the store-wide paths /metrics,
/v1/consumers, /v1/doctor, /v1/stats), :ro read-only. Every token needs a
secret of its own: two tokens with one secret exit 2, naming both by place
(the --token flags, then the file's lines) and tenant, never the secret.
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
cookie; the token never appears in a URL. Each token keeps at most 1,000
sessions (past that its own oldest ends, never another token's). A change made with the cookie
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
	hosts      []string
	grace      time.Duration
	accessLog  bool
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
	allowHostFlag(fs, &s.hosts)
	fs.DurationVar(&s.grace, "shutdown-grace", serve.DefaultShutdownGrace, "on SIGINT or SIGTERM, let requests in flight finish for `D`, then close their connections")
	fs.BoolVar(&s.accessLog, "access-log", false, "print one JSON line per request on stdout, after the address line")
}

func (s *serveCmd) run(ctx context.Context, c *cli, _ []string) error {
	if s.grace <= 0 {
		return &usageError{cmd: serveCommand, err: fmt.Errorf("--shutdown-grace %s: want a duration above 0, such as 30s", s.grace)}
	}
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
	if err := serve.ValidateTokens(tokens); err != nil {
		return &usageError{cmd: serveCommand, err: fmt.Errorf("%w (tokens are numbered in the order given: the --token flags, then the lines of --tokens-file)", err)}
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
		opts := &serve.Options{Tokens: tokens, CORSOrigins: s.origins, AllowedHosts: s.hosts, ShutdownGrace: s.grace,
			Logger: c.log.Named("serve"), Propagator: propagation.TraceContext{}}
		if s.accessLog {
			opts.AccessLog = c.stdout
		}
		h, err := serve.New(st, opts)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(c.stdout, "http://%s\n", ln.Addr()); err != nil {
			return err
		}
		// Until ctx ends; then stop accepting, end live streams, finish
		// the requests in flight within the grace and cut the rest.
		return h.Serve(ctx, ln)
	})
}
