package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

var projectionsCommand = &command{
	name:    "projections",
	summary: "list the projections: checkpoint, head, lag and status",
	usage:   "eventlite projections",
	about: `Lists the projections the store knows (those that ever ran or were
rebuilt): a table of NAME, CHECKPOINT, HEAD, LAG (positions behind the
head) and STATUS (running: a runner holds it; idle; stopped: halted on a
quarantined event, see 'eventlite quarantine'; rebuilding: a replay is
running; orphaned: its lease is held by a process on this host that is
gone and no runner took it over within a lease period after it expired:
start a runner); with --json, one
object per line, positions as strings:
  {"name":"catalog","checkpoint":"120","head":"123","lag":3,"status":"idle","quarantined":0}`,
	new: func() runner { return projectionsCmd{} },
}

type projectionsCmd struct{}

func (projectionsCmd) flags(*flag.FlagSet) {}

func (projectionsCmd) run(ctx context.Context, c *cli, _ []string) error {
	var stats []projection.Stats
	err := c.withReader(ctx, func(s *store.Store) error {
		var err error
		stats, err = projection.AllStats(ctx, s)
		return err
	})
	if err != nil {
		return err
	}
	if c.global.json {
		for _, st := range stats {
			if err := writeJSON(c.stdout, st); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	if len(stats) == 0 {
		fmt.Fprintln(tw, "no projections")
		return tw.Flush()
	}
	fmt.Fprintln(tw, "NAME\tCHECKPOINT\tHEAD\tLAG\tSTATUS")
	for _, st := range stats {
		status := string(st.Status)
		if st.Quarantined > 0 {
			status += fmt.Sprintf(" (%d quarantined)", st.Quarantined)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", st.Name, st.Checkpoint, st.Head, st.Lag, status)
	}
	return tw.Flush()
}
