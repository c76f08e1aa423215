package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
)

var scavengeCommand = &command{
	name:    "scavenge",
	summary: "remove what deletions, truncations and retention allow, and give the space back",
	usage:   "eventlite scavenge [--dry-run] [--vacuum] [--json]",
	about: `Applies the retention policies (see 'eventlite retention': each stream a
policy trims gets an eventlite.stream.truncated event), then removes, in
transactions of at most 1,000 events, the events before where each
stream's reads start: a truncated stream's, and all of a deleted stream's
but its tombstone. It never removes a stream's newest event (so a hard
delete's tombstone stays), an event the relay has not published (nor
discarded), or one a projection's checkpoint or a running rebuild has not
passed; it says which projection or unpublished event held events back. The
positions and event ids removed are recorded: positions are never handed
out again and are not holes; reusing a removed event's id is refused as a
duplicate (exit 4). The operation ledger keeps its rows. The data of the
events of subjects 'eventlite forget' erased is removed too ("erased").

Then it gives the space back: removed bytes are overwritten (secure_delete),
files created by this eventlite shrink (incremental vacuum; --vacuum runs a
full VACUUM, which also converts older files so that later scavenges shrink
them, and holds the database while it rewrites it), and the WAL is
checkpointed and truncated. It prints the events removed, the bytes
reclaimed and the time taken; with --json one object:
  {"dry_run":false,"removed":10,"batches":1,"erased":0,"bytes_before":1895208,"bytes_after":147456,
   "bytes_reclaimed":1747752,"free_pages":0,"seconds":0.018,
   "trims":[{"tenant":"default","stream":"cart-1","prefix":"cart-","before":4,"version":7}],
   "streams":[{"tenant":"default","stream":"order-2","from":1,"to":4,"count":4}],
   "ranges":[{"from":"1","to":"4"}],
   "held_back":[{"by":"projection","name":"orders","position":"3","events":7}]}
(positions are decimal strings). --dry-run lists what it would remove and
the truncations retention would make, and changes nothing.

Exits 6 when a reader kept the WAL checkpoint from finishing (what was
removed stays removed; run it again once readers are done), or when
interrupted (run it again: it goes on where it stopped). Exits 7 (busy) when
another connection was checkpointing the WAL at the same time, such as a
second scavenge (what was removed stays removed; run it again once that one
is done). --vacuum rewrites a
SQLite file: with a PostgreSQL --db it exits 2, "not supported on PostgreSQL"
(the server's autovacuum gives the space back).`,
	new: func() runner { return &scavengeCmd{} },
}

type scavengeCmd struct {
	dryRun, vacuum bool
}

func (sc *scavengeCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&sc.dryRun, "dry-run", false, "list what would be removed; change nothing")
	fs.BoolVar(&sc.vacuum, "vacuum", false, "run a full VACUUM afterwards (older files)")
}

type scavengeOutput struct {
	DryRun         bool              `json:"dry_run"`
	Removed        int64             `json:"removed"`
	Batches        int               `json:"batches"`
	Erased         int64             `json:"erased"`
	BytesBefore    int64             `json:"bytes_before"`
	BytesAfter     int64             `json:"bytes_after"`
	BytesReclaimed int64             `json:"bytes_reclaimed"`
	FreePages      int64             `json:"free_pages"`
	Seconds        float64           `json:"seconds"`
	Trims          []trimOutput      `json:"trims"`
	Streams        []scavengedOutput `json:"streams"`
	Ranges         []rangeOutput     `json:"ranges"`
	HeldBack       []heldBackOutput  `json:"held_back"`
	Error          string            `json:"error,omitempty"`
}

type trimOutput struct {
	Tenant  string `json:"tenant"`
	Stream  string `json:"stream"`
	Prefix  string `json:"prefix"`
	Before  int64  `json:"before"`
	Version int64  `json:"version,omitempty"`
}

type scavengedOutput struct {
	Tenant string `json:"tenant"`
	Stream string `json:"stream"`
	From   int64  `json:"from"`
	To     int64  `json:"to"`
	Count  int64  `json:"count"`
}

type rangeOutput struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type heldBackOutput struct {
	By       string `json:"by"`
	Name     string `json:"name,omitempty"`
	Position string `json:"position"`
	Events   int64  `json:"events"`
}

func (sc *scavengeCmd) run(ctx context.Context, c *cli, _ []string) error {
	if sc.dryRun && sc.vacuum {
		return &usageError{cmd: scavengeCommand, err: errors.New("scavenge: --dry-run changes nothing, --vacuum rewrites the file: give one")}
	}
	if sc.vacuum && c.onPostgres() {
		return &fileOnlyError{what: "scavenge --vacuum", instead: "it rewrites a SQLite file; on PostgreSQL run scavenge without it, and leave the space to the server's autovacuum"}
	}
	var bar *progressbar.ProgressBar
	opts := lifecycle.ScavengeOptions{DryRun: sc.dryRun, Vacuum: sc.vacuum}
	if !sc.dryRun {
		tty, last := c.stderrIsTerminal(), time.Now()
		opts.Progress = func(removed, total int64) {
			if !tty {
				if time.Since(last) >= 2*time.Second {
					last = time.Now()
					fmt.Fprintf(c.stderr, "scavenge: removed %d of at most %d events\n", removed, total)
				}
				return
			}
			if bar == nil {
				bar = progressbar.NewOptions64(max(total, 1),
					progressbar.OptionSetWriter(c.stderr),
					progressbar.OptionSetDescription("scavenge"),
					progressbar.OptionSetPredictTime(true),
					progressbar.OptionSetElapsedTime(true),
					progressbar.OptionSetWidth(30),
					progressbar.OptionThrottle(100*time.Millisecond),
				)
			}
			_ = bar.Set64(removed)
		}
	}
	var res lifecycle.ScavengeResult
	var serr error
	open := c.withStore
	if sc.dryRun {
		open = func(ctx context.Context, _ bool, fn func(*store.Store) error) error { return c.withReader(ctx, fn) }
	}
	err := open(ctx, false, func(s *store.Store) error {
		res, serr = lifecycle.For(s).Scavenge(ctx, opts)
		return nil
	})
	if bar != nil {
		_ = bar.RenderBlank()
		fmt.Fprintln(c.stderr)
	}
	if err != nil {
		return err
	}
	if serr != nil && !errors.Is(serr, lifecycle.ErrCheckpointBlocked) && res.Removed == 0 {
		return serr
	}
	if err := sc.print(c, res, serr); err != nil {
		return err
	}
	if errors.Is(serr, lifecycle.ErrCheckpointBlocked) {
		return &exitError{code: exitIncomplete, err: serr}
	}
	return serr
}

func (sc *scavengeCmd) print(c *cli, res lifecycle.ScavengeResult, serr error) error {
	if c.global.json {
		o := scavengeOutput{DryRun: res.DryRun, Removed: res.Removed, Batches: res.Batches, Erased: res.Erased,
			BytesBefore: res.BytesBefore, BytesAfter: res.BytesAfter, BytesReclaimed: res.BytesReclaimed,
			FreePages: res.FreePages, Seconds: seconds(res.Duration),
			Trims: []trimOutput{}, Streams: []scavengedOutput{}, Ranges: []rangeOutput{}, HeldBack: []heldBackOutput{}}
		for _, t := range res.Trims {
			o.Trims = append(o.Trims, trimOutput{Tenant: t.Tenant, Stream: t.Stream, Prefix: t.Prefix, Before: t.Before, Version: t.Version})
		}
		for _, st := range res.Streams {
			o.Streams = append(o.Streams, scavengedOutput{Tenant: st.Tenant, Stream: st.Stream, From: st.From, To: st.To, Count: st.Count})
		}
		for _, r := range res.Ranges {
			o.Ranges = append(o.Ranges, rangeOutput{From: strconv.FormatInt(r.From, 10), To: strconv.FormatInt(r.To, 10)})
		}
		for _, h := range res.HeldBack {
			o.HeldBack = append(o.HeldBack, heldBackOutput{By: h.By, Name: h.Name, Position: strconv.FormatInt(h.Position, 10), Events: h.Events})
		}
		if serr != nil {
			o.Error = serr.Error()
		}
		return json.NewEncoder(c.stdout).Encode(o)
	}
	w := c.stdout
	trimmed := "truncated"
	if res.DryRun {
		trimmed = "would truncate"
	}
	for _, t := range res.Trims {
		fmt.Fprintf(w, "retention %s %q (tenant %s) before version %d (policy %q)\n", trimmed, t.Stream, t.Tenant, t.Before, t.Prefix)
	}
	if res.DryRun {
		for _, st := range res.Streams {
			fmt.Fprintf(w, "would remove %q (tenant %s) versions %d to %d (%d events)\n", st.Stream, st.Tenant, st.From, st.To, st.Count)
		}
	}
	for _, h := range res.HeldBack {
		switch h.By {
		case "outbox":
			fmt.Fprintf(w, "held back %d events: the event at position %d is neither published nor discarded (run the relay, or see 'eventlite dlq list')\n", h.Events, h.Position)
		case "rebuild":
			fmt.Fprintf(w, "held back %d events: the rebuild of projection %q is at position %d\n", h.Events, h.Name, h.Position)
		default:
			fmt.Fprintf(w, "held back %d events: projection %q has applied up to position %d only\n", h.Events, h.Name, h.Position)
		}
	}
	if res.DryRun {
		fmt.Fprintf(w, "would remove %d events from %d streams; changed nothing\n", res.Removed, len(res.Streams))
		return nil
	}
	fmt.Fprintf(w, "removed %d events from %d streams in %d batches; reclaimed %s (%s to %s) in %.3fs\n",
		res.Removed, len(res.Streams), res.Batches, size(max(res.BytesReclaimed, 0)), size(res.BytesBefore), size(res.BytesAfter), seconds(res.Duration))
	if res.Erased > 0 {
		fmt.Fprintf(w, "removed the data of %d events of forgotten subjects\n", res.Erased)
	}
	if res.FreePages > 0 {
		fmt.Fprintf(w, "%d pages stay free inside the file (a file created before eventlite set auto_vacuum): run 'eventlite scavenge --vacuum' to give them back\n", res.FreePages)
	}
	return nil
}
