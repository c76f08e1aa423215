package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
)

var doctorCommand = &command{
	name:    "doctor",
	summary: "reconcile: find what slipped past the online protocols",
	usage:   "eventlite doctor [--deep] [--outbox-age D] [--executing-age D] [--approval-age D] [--approved-age D] [--deferral-age D] [--projection-lag D]",
	about: `Scans the store and reports, with counts, oldest ages and the ids to act on:
events unpublished longer than --outbox-age once a relay has run (before
any relay ran, pending rows are information), dead letters and the streams they
park, effects UNKNOWN or EXECUTING longer than --executing-age, effects
AWAITING_APPROVAL longer than --approval-age (effects_awaiting_approval) or
APPROVED longer than --approved-age without running (effects_approved_not_run;
see 'eventlite effects'), expired leases
with work waiting behind them, deferred outside events older than
--deferral-age, quarantined events (see 'eventlite quarantine'), version
conflicts, projections stopped on a quarantined event, orphaned (their lease
held by a process on this host that is gone, with no runner taking over), or
more than --projection-lag behind while a runner holds
their lease (a projection with no runner is information; catalog is brought up
to date on demand and does not count), global-position holes and per-stream
version gaps (a restore's are information: position_holes_restore and
stream_version_gaps_restore, which lists tenant/stream:from-to), streams of the store's own (eventlite-...) that an older
eventlite let a user delete (own_stream_deleted: forget restores them), and
data keys wrapped by more than one master key (master_keys_mixed). With --deep it also dry-runs a rebuild of each projection this
binary knows (catalog) at the live read model's checkpoint and reports drift
from it (projection_drift, a problem). A read model that lags behind a
truncate or delete (a retention trim's included) whose removed events it had
applied differs from the rebuild until it catches up: that is reported as lag
(projection_lag_deep, information), with what to do.

Exit status 0 when healthy, 6 when anything needs a person. With --json it
prints one object:
  {"healthy":true,"findings":[{"kind":"...","severity":"problem"|"info",
   "count":1,"oldest_age_seconds":12.5,"ids":["..."]}]}`,
	new: func() runner { return &doctorCmd{} },
}

type doctorCmd struct {
	deep bool
	opts store.DiagnoseOptions
}

func (d *doctorCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&d.deep, "deep", false, "also dry-run a rebuild of each known projection and report drift")
	fs.DurationVar(&d.opts.OutboxAge, "outbox-age", 5*time.Minute, "events unpublished for longer than `D` are a problem")
	fs.DurationVar(&d.opts.ExecutingAge, "executing-age", 10*time.Minute, "effects EXECUTING longer than `D` are stuck")
	fs.DurationVar(&d.opts.ApprovalAge, "approval-age", 24*time.Hour, "effects AWAITING_APPROVAL longer than `D` wait too long for a person")
	fs.DurationVar(&d.opts.ApprovedAge, "approved-age", time.Hour, "effects APPROVED longer than `D` without running are a problem")
	fs.DurationVar(&d.opts.DeferralAge, "deferral-age", 10*time.Minute, "deferred outside events older than `D` are a problem")
	fs.DurationVar(&d.opts.ProjectionLag, "projection-lag", time.Minute, "a running projection more than `D` behind is lagging")
}

// doctorReport is the --json output.
type doctorReport struct {
	Healthy  bool            `json:"healthy"`
	Findings []store.Finding `json:"findings"`
}

func (d *doctorCmd) run(ctx context.Context, c *cli, _ []string) error {
	for _, v := range []time.Duration{d.opts.OutboxAge, d.opts.ExecutingAge, d.opts.ApprovalAge, d.opts.ApprovedAge, d.opts.DeferralAge, d.opts.ProjectionLag} {
		if v <= 0 {
			return &usageError{cmd: doctorCommand, err: errors.New("every bound must be a positive duration such as 90s or 5m")}
		}
	}
	d.opts.OnDemand = []string{projection.CatalogName}
	var report doctorReport
	start := time.Now()
	// A deep check dry-runs rebuilds, which build shadow tables in the
	// file: it opens the store for writing. Without --deep doctor only reads.
	open := c.withReader
	if d.deep {
		open = func(ctx context.Context, fn func(*store.Store) error) error { return c.withStore(ctx, false, fn) }
	}
	err := open(ctx, func(s *store.Store) error {
		fs, err := s.Diagnose(ctx, d.opts)
		if err != nil {
			return err
		}
		report.Findings = fs
		if d.deep {
			drift, err := deepCheck(ctx, c, s)
			if err != nil {
				return err
			}
			report.Findings = append(report.Findings, drift...)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return &interruptedError{msg: "doctor interrupted before it finished; run it again"}
		}
		return err
	}
	if report.Findings == nil {
		report.Findings = []store.Finding{}
	}
	report.Healthy = true
	for _, f := range report.Findings {
		if f.Severity == store.SeverityProblem {
			report.Healthy = false
		}
	}
	c.log.Debug("doctor scan", "took", time.Since(start))
	if c.global.json {
		if err := writeJSON(c.stdout, report); err != nil {
			return err
		}
	} else if err := printDoctor(c, report); err != nil {
		return err
	}
	if !report.Healthy {
		return &exitError{code: exitIncomplete, err: errors.New("doctor found problems that need a person (listed above)")}
	}
	return nil
}

// deepCheck dry-runs a rebuild of every projection this binary knows and
// reports drift. The dry run compares at the live read model's
// checkpoint. When the read model lags and the log holds, above its
// checkpoint, a truncate or delete (a retention trim's included), a
// scavenge may have removed events below the checkpoint that the read
// model applied and whose removal it has not seen yet: a difference there
// is lag, not drift, and is reported as information
// (projection_lag_deep) with what to do.
func deepCheck(ctx context.Context, c *cli, s *store.Store) ([]store.Finding, error) {
	drift := store.Finding{Kind: "projection_drift", Severity: store.SeverityProblem, IDs: []string{},
		Detail: "read models that differ from a rebuild from the log: run eventlite replay NAME to rebuild and swap"}
	lag := store.Finding{Kind: "projection_lag_deep", Severity: store.SeverityInfo, IDs: []string{},
		Detail: "read models behind a truncate or delete whose removed events they applied: they match a rebuild once they catch up " +
			"(catalog: run eventlite catalog; your own: start its runner), then run doctor --deep again"}
	head, err := s.Head(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range builtinProjections() {
		if _, err := projection.Records(s).Get(ctx, p.Name); errors.Is(err, store.ErrNotFound) {
			continue // never built: nothing to compare
		}
		res, err := replay.Rebuild(ctx, s, p, &replay.Options{DryRun: true, Logger: c.log})
		if err != nil {
			return nil, fmt.Errorf("deep check of %s: %w", p.Name, err)
		}
		if res.Drift.Total == 0 {
			continue
		}
		id := fmt.Sprintf("%s (missing %d, extra %d, different %d)", p.Name, res.Drift.Missing, res.Drift.Extra, res.Drift.Different)
		if res.Watermark < head {
			removals, err := projection.Rebuilds(s).CountEvents(ctx, res.Watermark, head, []string{lifecycle.TypeStreamTruncated, lifecycle.TypeStreamDeleted})
			if err != nil {
				return nil, fmt.Errorf("deep check of %s: %w", p.Name, err)
			}
			if removals > 0 {
				lag.Count += head - res.Watermark
				lag.IDs = append(lag.IDs, fmt.Sprintf("%s at position %d of %d, %s", p.Name, res.Watermark, head, id))
				continue
			}
		}
		drift.Count += int64(res.Drift.Total)
		drift.IDs = append(drift.IDs, id)
	}
	var out []store.Finding
	if lag.Count > 0 {
		out = append(out, lag)
	}
	if drift.Count > 0 {
		out = append(out, drift)
	}
	return out, nil
}

func printDoctor(c *cli, r doctorReport) error {
	if len(r.Findings) == 0 {
		_, err := fmt.Fprintln(c.stdout, "healthy: nothing to report")
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEVERITY\tKIND\tCOUNT\tOLDEST\tIDS")
	for _, f := range r.Findings {
		oldest := "-"
		if f.OldestAgeSeconds > 0 {
			oldest = (time.Duration(f.OldestAgeSeconds * float64(time.Second))).Round(time.Second).String()
		}
		ids := strings.Join(f.IDs, ", ")
		if int64(len(f.IDs)) < f.Count {
			ids += fmt.Sprintf(" (+%d more)", f.Count-int64(len(f.IDs)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", f.Severity, f.Kind, f.Count, oldest, printable(ids))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout)
	for _, f := range r.Findings {
		fmt.Fprintf(c.stdout, "%s: %s\n", f.Kind, f.Detail)
	}
	if r.Healthy {
		fmt.Fprintln(c.stdout, "\nhealthy: only information above")
	}
	return nil
}
