package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/eventlite/eventlite/store"
)

var streamsCommand = &command{
	name:    "streams",
	summary: "list the tenant's streams",
	usage:   "eventlite streams",
	about: `Lists the tenant's streams in stream id order: a table of STREAM, VERSION
and UPDATED (UTC); with --json, one object per line:
  {"tenant":"default","stream":"order-1","version":3,"updated":"2025-01-02T03:04:05.123456789Z"}`,
	new: func() runner { return streamsCmd{} },
}

type streamsCmd struct{}

func (streamsCmd) flags(*flag.FlagSet) {}

// streamOutput is one line of streams --json.
type streamOutput struct {
	Tenant  string `json:"tenant"`
	Stream  string `json:"stream"`
	Version int64  `json:"version"`
	Updated string `json:"updated"` // RFC 3339, UTC
}

func (streamsCmd) run(ctx context.Context, c *cli, _ []string) error {
	var tw *tabwriter.Writer
	if !c.global.json {
		tw = tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	}
	n := 0
	err := c.withReader(ctx, func(s *store.Store) error {
		for si, err := range s.Streams(ctx, string(c.global.tenant)) {
			if err != nil {
				return err
			}
			updated := si.UpdatedAt.UTC()
			if c.global.json {
				err = writeJSON(c.stdout, streamOutput{Tenant: si.Tenant, Stream: si.Stream, Version: si.Version, Updated: updated.Format(time.RFC3339Nano)})
			} else {
				if n == 0 {
					fmt.Fprintln(tw, "STREAM\tVERSION\tUPDATED")
				}
				_, err = fmt.Fprintf(tw, "%s\t%d\t%s\n", printable(si.Stream), si.Version, updated.Format(time.RFC3339))
			}
			if err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if tw != nil {
		if n == 0 && err == nil {
			fmt.Fprintf(tw, "no streams (tenant %s)\n", c.global.tenant)
		}
		err = errors.Join(err, tw.Flush())
	}
	return err
}
