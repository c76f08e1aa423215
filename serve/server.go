package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// headerTimeout bounds the reading of a request's headers.
const headerTimeout = 10 * time.Second

// Serve answers requests on ln until ctx ends, then shuts down: it stops
// accepting, ends live readers (Close), and lets the requests in flight
// finish for Options.ShutdownGrace; the connections still open after it
// are closed, and a warning names how many were cut. A shutdown is a
// normal stop: Serve returns nil. It returns an error only when serving
// fails. Keep-alive connections idle for Options.IdleTimeout are closed,
// and headers must arrive within 10s.
func (h *Handler) Serve(ctx context.Context, ln net.Listener) error {
	var (
		mu    sync.Mutex
		conns = map[net.Conn]http.ConnState{}
	)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       h.opts.IdleTimeout,
		ErrorLog:          h.log.StandardLogger(nil),
		// OPTIONS * reaches the handler (a problem) rather than net/http's
		// empty 200.
		DisableGeneralOptionsHandler: true,
		ConnState: func(c net.Conn, s http.ConnState) {
			mu.Lock()
			defer mu.Unlock()
			switch s {
			case http.StateClosed, http.StateHijacked:
				delete(conns, c)
			default:
				conns[c] = s
			}
		},
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		_ = h.Close()
		return err
	case <-ctx.Done():
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = h.Close() // live readers end at once
	}()
	sctx, cancel := context.WithTimeout(context.Background(), h.opts.ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		mu.Lock()
		cut := 0
		for _, s := range conns {
			if s != http.StateIdle {
				cut++
			}
		}
		mu.Unlock()
		_ = srv.Close()
		h.log.Warn("shutdown grace passed: closed the connections still open", "cut", cut, "grace", h.opts.ShutdownGrace.String())
		err = nil
	}
	<-closed
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
