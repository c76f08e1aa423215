package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eventlite/eventlite/metrics"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

var catalogCommand = &command{
	name:    "catalog",
	summary: "list the tenant's streams from the catalog projection, brought up to date",
	usage:   "eventlite catalog [--all-tenants]\neventlite catalog --follow [--metrics ADDR [--allow-host NAME]...]",
	about: `Brings the built-in catalog projection up to date (unless a runner holds
it and keeps it current) and lists the tenant's streams from it, or every
tenant's with --all-tenants: a table of TENANT, STREAM, VERSION, FIRST and
LAST (the times of the stream's first and newest events, UTC) and EVENTS
(by type); with --json, one object per line:
  {"tenant":"default","stream":"order-1","version":3,"events_by_type":{"order.paid":1,"order.placed":2},
   "first_time":"2025-01-02T03:04:05.123Z","last_time":"2025-01-02T04:05:06Z"}

With --follow it prints nothing and runs as the catalog's projection runner
instead: it holds the catalog's lease (standing by while another runner
holds it), keeps the catalog current as events are appended, and stops
cleanly (exit 0, lease released) on SIGINT or SIGTERM. With --metrics
HOST:PORT it serves Prometheus metrics at http://HOST:PORT/metrics, the
same as relay --metrics (log, outbox, projections, consumers, effects),
with the same Host rule (--allow-host NAME, repeatable).`,
	new: func() runner { return &catalogCmd{} },
}

type catalogCmd struct {
	all     bool
	follow  bool
	metrics metricsAddr
	hosts   []string
}

func (cc *catalogCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&cc.all, "all-tenants", false, "list every tenant's streams, not only --tenant's")
	fs.BoolVar(&cc.follow, "follow", false, "run as the catalog's projection runner until interrupted, printing nothing")
	fs.Var(&cc.metrics, "metrics", "with --follow, serve Prometheus metrics at http://`ADDR`/metrics (HOST:PORT)")
	allowHostFlag(fs, &cc.hosts)
}

// runFollow runs the catalog's projection runner until ctx ends.
func (cc *catalogCmd) runFollow(ctx context.Context, c *cli) error {
	return c.withStore(ctx, true, func(s *store.Store) error {
		if err := requireMasterKey(ctx, s, "catalog"); err != nil {
			return err
		}
		r, err := projection.NewRunner(s, projection.Catalog(), &projection.RunnerOptions{Logger: c.log})
		if err != nil {
			return err
		}
		if cc.metrics != "" {
			reg, err := metrics.NewRegistry(s, nil) // the Go runtime's and the process's metrics beside eventlite's
			if err != nil {
				return err
			}
			ms, err := serveMetrics(string(cc.metrics), cc.hosts, reg, c.log)
			if err != nil {
				return err
			}
			defer ms.Close()
			c.log.Info("serving metrics", "url", "http://"+ms.Addr().String()+"/metrics")
		}
		return r.Run(ctx)
	})
}

// catalogOutput is one line of catalog --json.
type catalogOutput struct {
	Tenant       string           `json:"tenant"`
	Stream       string           `json:"stream"`
	Version      int64            `json:"version"`
	EventsByType map[string]int64 `json:"events_by_type"`
	FirstTime    string           `json:"first_time"` // RFC 3339, UTC
	LastTime     string           `json:"last_time"`
}

func (cc *catalogCmd) run(ctx context.Context, c *cli, _ []string) error {
	if cc.metrics != "" && !cc.follow {
		return &usageError{cmd: catalogCommand, err: errors.New("--metrics goes with --follow")}
	}
	if cc.follow {
		return cc.runFollow(ctx, c)
	}
	tenant := string(c.global.tenant)
	if cc.all {
		tenant = ""
	}
	var tw *tabwriter.Writer
	if !c.global.json {
		tw = tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	}
	n := 0
	err := c.withStore(ctx, false, func(s *store.Store) error {
		if err := requireMasterKey(ctx, s, "catalog"); err != nil {
			return err
		}
		r, err := projection.NewRunner(s, projection.Catalog(), &projection.RunnerOptions{Logger: c.log})
		if err != nil {
			return err
		}
		switch _, err := r.CatchUp(ctx); {
		case errors.Is(err, store.ErrLeaseHeld):
			c.log.Debug("a runner holds the catalog and keeps it current; reading it as it is", "error", err)
		case err != nil:
			return fmt.Errorf("bring the catalog up to date: %w", err)
		}
		return projection.ReadCatalog(ctx, s, tenant, func(e projection.CatalogEntry) error {
			n++
			if c.global.json {
				return writeJSON(c.stdout, catalogOutput{Tenant: e.Tenant, Stream: e.Stream, Version: e.Version, EventsByType: e.EventsByType,
					FirstTime: e.FirstTime.UTC().Format(time.RFC3339Nano), LastTime: e.LastTime.UTC().Format(time.RFC3339Nano)})
			}
			if n == 1 {
				fmt.Fprintln(tw, "TENANT\tSTREAM\tVERSION\tFIRST\tLAST\tEVENTS")
			}
			_, err := fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", e.Tenant, printable(e.Stream), e.Version,
				e.FirstTime.UTC().Format(time.RFC3339), e.LastTime.UTC().Format(time.RFC3339), byType(e.EventsByType))
			return err
		})
	})
	if errors.Is(err, errNoDatabase) {
		c.log.Warn("no catalog to show", "error", err)
		err = nil
	}
	if tw != nil {
		if n == 0 && err == nil {
			if cc.all {
				fmt.Fprintln(tw, "no streams")
			} else {
				fmt.Fprintf(tw, "no streams (tenant %s)\n", tenant)
			}
		}
		err = errors.Join(err, tw.Flush())
	}
	return err
}

// byType prints counts by type as "type=n", types in order, quoted when
// they would not print as one word.
func byType(m map[string]int64) string {
	types := make([]string, 0, len(m))
	for t := range m {
		types = append(types, t)
	}
	slices.Sort(types)
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s=%d", printable(t), m[t])
	}
	return strings.Join(parts, " ")
}
