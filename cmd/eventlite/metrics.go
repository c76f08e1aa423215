package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/eventlite/eventlite/internal/hostguard"
	"github.com/eventlite/eventlite/metrics"
	"github.com/eventlite/eventlite/serve"
)

// metricsAddr is the value of a --metrics flag: HOST:PORT, the host
// possibly empty (every interface), the port a number (0: any free port).
type metricsAddr string

func (a *metricsAddr) String() string { return string(*a) }

func (a *metricsAddr) Set(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want HOST:PORT, such as 127.0.0.1:9464")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535", port)
	}
	*a = metricsAddr(s)
	return nil
}

// metricsServer serves a registry's metrics over HTTP at /metrics.
type metricsServer struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{} // closed when Serve has returned
}

// allowHostFlag registers --allow-host on fs: host names served besides
// localhost and IP literals (the Host rule against DNS rebinding).
func allowHostFlag(fs *flag.FlagSet, hosts *[]string) {
	fs.Func("allow-host", "also answer requests whose Host is `NAME` (repeatable; localhost and IP addresses always are)", func(v string) error {
		if err := hostguard.Validate(v); err != nil {
			return err
		}
		*hosts = append(*hosts, v)
		return nil
	})
}

// serveMetrics listens on addr and serves reg at /metrics until Close,
// to requests whose Host is localhost, an IP literal or one of hosts (403
// host-not-allowed otherwise). A listen error (the port is taken, the
// host is not local) is returned at once.
func serveMetrics(addr string, hosts []string, reg *prometheus.Registry, log hclog.Logger) (*metricsServer, error) {
	check, err := hostguard.New(hosts)
	if err != nil {
		return nil, fmt.Errorf("--allow-host: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w: choose another address, or leave --metrics out", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}),
		ErrorHandling: promhttp.HTTPErrorOnError,
		Timeout:       metrics.DefaultTimeout + 5*time.Second,
	}))
	m := &metricsServer{
		srv:  &http.Server{Handler: check.Handler(mux), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: serve.DefaultIdleTimeout},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	return m, nil
}

// Addr is the address the server listens on (the port chosen, when the
// address asked for port 0).
func (m *metricsServer) Addr() net.Addr { return m.addr }

// Close stops the server: it lets scrapes in flight finish for up to 2 s,
// then closes their connections, and waits for the server to return.
func (m *metricsServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if err != nil {
		err = m.srv.Close()
	}
	<-m.done
	return err
}
