// Package replaycmd is the "replay" subcommand, for the eventlite binary
// and for a service's own binary to mount over its own projections:
//
// Its Config.Open may open a SQLite file or a postgres:// address (a binary
// that imports store/postgres).
//
//	replay NAME [--dry-run] [--from-scratch] [--json]
//
// It rebuilds the projection NAME (see package replay) and prints its
// progress on stderr: a progress bar when stderr is a terminal, a plain
// line every few seconds otherwise; with --json, one JSON object per line
// on stdout instead, {"phase", "done", "total", "rate"}, then a summary
// object as the last line. A dry run's summary has "drift" (the total),
// "missing", "extra" and "different".
//
// Exit codes: 0 done (a dry run: no drift); 1 an error; 2 usage; 5 no
// such projection; 6 a dry run found drift, or the replay was interrupted
// (SIGINT: the next run resumes); 7 another replay of the projection is
// running, or the database stayed locked: retry.
package replaycmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/schollz/progressbar/v3"

	"github.com/eventlite/eventlite/internal/cliflag"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
)

// Exit codes.
const (
	ExitOK       = 0
	ExitError    = 1
	ExitUsage    = 2
	ExitNotFound = 5
	ExitDrift    = 6 // also: interrupted, resumable
	ExitBusy     = 7
)

// Config is what the command runs with.
type Config struct {
	// Store is the store to replay in. When nil, Open opens one, which
	// Run closes when done.
	Store *store.Store
	Open  func(ctx context.Context) (*store.Store, error)
	// Projections are those NAME may name.
	Projections []projection.Projection
	// Stdout and Stderr default to discarding.
	Stdout, Stderr io.Writer
	// StderrIsTerminal shows a progress bar on stderr instead of lines.
	StderrIsTerminal bool
	// Name is the command's name in messages. Default "replay".
	Name string
	// ProgressEvery is how often progress is reported (lines, JSON
	// objects); phase changes are reported at once. Default 2s.
	ProgressEvery time.Duration
	// Logger receives the replay's logs. Default: none.
	Logger hclog.Logger
}

// Flags are the command's options.
type Flags struct {
	DryRun      bool
	FromScratch bool
	JSON        bool
}

// Register adds the command's flags to fs (all but --json, which a
// mounting program may already have as a global flag).
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&f.DryRun, "dry-run", f.DryRun, "rebuild beside the live read model, compare, report the drift (exit 6 when any) and swap nothing")
	fs.BoolVar(&f.FromScratch, "from-scratch", f.FromScratch, "drop what an interrupted replay left and rebuild from position 0")
}

// Usage is the command's synopsis.
func Usage(name string) string {
	return name + " NAME [--dry-run] [--from-scratch] [--json]"
}

// Run runs the command with args (those after the command's name) and
// returns its exit code. Errors go to Stderr, prefixed with the name.
func Run(ctx context.Context, args []string, cfg Config) int {
	cfg = cfg.withDefaults()
	var f Flags
	fs := flag.NewFlagSet(cfg.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	fs.BoolVar(&f.JSON, "json", false, "print progress and the summary as JSON lines on stdout")
	pos, err := cliflag.ParseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		writeUsage(cfg.Stdout, cfg.Name, fs)
		return ExitOK
	}
	if err == nil && len(pos) != 1 {
		err = fmt.Errorf("want one projection NAME, got %d arguments", len(pos))
	}
	if err != nil {
		fmt.Fprintf(cfg.Stderr, "%s: %v\n\n", cfg.Name, err)
		writeUsage(cfg.Stderr, cfg.Name, fs)
		return ExitUsage
	}
	err = Replay(ctx, pos[0], f, cfg)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(cfg.Stderr, "%s: %v\n", cfg.Name, err)
	return ExitCode(err)
}

func writeUsage(w io.Writer, name string, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\nRebuilds the projection NAME from the log beside its live read model, verifies\nit, and swaps it in atomically (resuming an interrupted replay).\n\nFlags:\n", Usage(name))
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(w, "  --%s\t%s\n", f.Name, f.Usage)
	})
}

func (c Config) withDefaults() Config {
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Name == "" {
		c.Name = "replay"
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 2 * time.Second
	}
	return c
}

// ErrUnknownProjection: NAME is none of the configured projections.
var ErrUnknownProjection = errors.New("no such projection")

// mountAdvice ends the unknown projection's message: the eventlite
// binary knows only its catalog, and a service's projections are replayed
// by the service's binary.
const mountAdvice = "a binary replays only the projections it declares; replay an application's projections with the application's own binary, mounting replay/replaycmd with them in Config.Projections (docs/handler-sql.md, \"Replaying an application's projections\")"

// ErrDrift: a dry run found the live read model differs from its rebuild.
var ErrDrift = errors.New("the read model drifted")

// ExitCode maps an error of Replay to the command's exit code.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrUnknownProjection):
		return ExitNotFound
	case errors.Is(err, ErrDrift), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ExitDrift
	case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrBusy):
		return ExitBusy
	}
	return ExitError
}

// Replay replays the projection name with flags f, printing progress and
// the summary, and returns nil, or an error for ExitCode (ErrDrift when a
// dry run found drift: its summary is printed). Programs that parse their
// own command lines call it; Run parses and calls it.
func Replay(ctx context.Context, name string, f Flags, cfg Config) (err error) {
	cfg = cfg.withDefaults()
	i := slices.IndexFunc(cfg.Projections, func(p projection.Projection) bool { return p.Name == name })
	if i < 0 {
		names := make([]string, len(cfg.Projections))
		for i, p := range cfg.Projections {
			names[i] = p.Name
		}
		return fmt.Errorf("%w %q (there are: %s): %s", ErrUnknownProjection, name, strings.Join(names, ", "), mountAdvice)
	}
	p := cfg.Projections[i]
	s := cfg.Store
	if s == nil {
		if cfg.Open == nil {
			return errors.New("replaycmd: Config needs a Store or Open")
		}
		if s, err = cfg.Open(ctx); err != nil {
			return err
		}
		defer func() {
			if cerr := s.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	rep := newReporter(cfg, name, f.JSON)
	res, err := replay.Rebuild(ctx, s, p, &replay.Options{
		DryRun:      f.DryRun,
		FromScratch: f.FromScratch,
		Progress:    rep.progress,
		Logger:      cfg.Logger,
	})
	rep.finish()
	if err != nil {
		return err
	}
	if err := rep.summary(res); err != nil {
		return err
	}
	if res.DryRun && res.Drift.Total > 0 {
		return fmt.Errorf("%w: %d rows differ from a rebuild (missing %d, extra %d, different %d); run the replay without --dry-run to rebuild it",
			ErrDrift, res.Drift.Total, res.Drift.Missing, res.Drift.Extra, res.Drift.Different)
	}
	return nil
}

// reporter prints progress: a bar, lines, or JSON objects.
type reporter struct {
	cfg   Config
	name  string
	json  bool
	bar   *progressbar.ProgressBar
	last  time.Time
	phase replay.Phase
	seen  bool
	prev  replay.Progress
}

func newReporter(cfg Config, name string, jsonOut bool) *reporter {
	return &reporter{cfg: cfg, name: name, json: jsonOut}
}

// progressLine is one JSON progress object.
type progressLine struct {
	Phase string  `json:"phase"`
	Done  int64   `json:"done"`
	Total int64   `json:"total"`
	Rate  float64 `json:"rate"` // events per second
}

func (r *reporter) progress(p replay.Progress) {
	r.prev = p
	changed := !r.seen || p.Phase != r.phase
	r.seen, r.phase = true, p.Phase
	switch {
	case r.json:
		if changed || time.Since(r.last) >= r.cfg.ProgressEvery {
			r.last = time.Now()
			writeJSON(r.cfg.Stdout, progressLine{Phase: string(p.Phase), Done: p.Done, Total: p.Total, Rate: round(p.Rate)})
		}
	case r.cfg.StderrIsTerminal:
		if r.bar == nil {
			r.bar = progressbar.NewOptions64(max(p.Total, 1),
				progressbar.OptionSetWriter(r.cfg.Stderr),
				progressbar.OptionSetDescription(r.describe(p.Phase)),
				progressbar.OptionShowCount(),
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("events"),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionSetElapsedTime(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond),
			)
		}
		if changed {
			r.bar.Describe(r.describe(p.Phase))
		}
		if p.Total > r.bar.GetMax64() {
			r.bar.ChangeMax64(p.Total)
		}
		_ = r.bar.Set64(p.Done)
	default:
		if changed || time.Since(r.last) >= r.cfg.ProgressEvery {
			r.last = time.Now()
			fmt.Fprintln(r.cfg.Stderr, r.line(p))
		}
	}
}

func (r *reporter) describe(ph replay.Phase) string {
	return r.cfg.Name + " " + r.name + ": " + string(ph)
}

// line is a plain progress line.
func (r *reporter) line(p replay.Progress) string {
	pct := 100.0
	if p.Total > 0 {
		pct = 100 * float64(p.Done) / float64(p.Total)
	}
	left := ""
	if p.Rate > 0 && p.Total > p.Done {
		left = ", " + (time.Duration(float64(p.Total-p.Done)/p.Rate) * time.Second).Round(time.Second).String() + " left"
	}
	return fmt.Sprintf("%s %s: %s %d/%d events (%.0f%%), %.0f events/s%s", r.cfg.Name, r.name, p.Phase, p.Done, p.Total, pct, p.Rate, left)
}

// finish ends the progress display: the bar's last state, or a last line
// when the phase was not just printed.
func (r *reporter) finish() {
	if !r.seen {
		return
	}
	switch {
	case r.json:
	case r.bar != nil:
		// The bar's last state, on its line, then a new line for what
		// follows (the bar finishes, silently, at every 100%).
		_ = r.bar.Set64(r.prev.Done)
		_ = r.bar.RenderBlank()
		fmt.Fprintln(r.cfg.Stderr)
	}
}

// summaryLine is the last JSON object of a run.
type summaryLine struct {
	Projection string `json:"projection"`
	DryRun     bool   `json:"dry_run"`
	Swapped    bool   `json:"swapped"`
	Generation int64  `json:"generation"`
	Resumed    bool   `json:"resumed"`
	// Positions are strings, as everywhere in eventlite's JSON.
	ResumedFrom int64   `json:"resumed_from,string,omitempty"`
	Watermark   int64   `json:"watermark,string"`
	Checkpoint  int64   `json:"checkpoint,string"`
	Applied     int64   `json:"applied"`
	AppliedNow  int64   `json:"applied_now"`
	Seconds     float64 `json:"seconds"`
	// A dry run's drift.
	Drift     *int64       `json:"drift,omitempty"`
	Missing   *int64       `json:"missing,omitempty"`
	Extra     *int64       `json:"extra,omitempty"`
	Different *int64       `json:"different,omitempty"`
	Tables    []tableDrift `json:"tables,omitempty"`
}

type tableDrift struct {
	Table         string `json:"table"`
	Missing       int64  `json:"missing"`
	Extra         int64  `json:"extra"`
	Different     int64  `json:"different"`
	SchemaDiffers bool   `json:"schema_differs,omitempty"`
}

func (r *reporter) summary(res replay.Result) error {
	if r.json {
		sl := summaryLine{Projection: res.Projection, DryRun: res.DryRun, Swapped: res.Swapped, Generation: res.Generation,
			Resumed: res.Resumed, ResumedFrom: res.ResumedFrom, Watermark: res.Watermark, Checkpoint: res.Checkpoint,
			Applied: res.Applied, AppliedNow: res.AppliedNow, Seconds: round(res.Elapsed.Seconds())}
		if res.DryRun {
			d := res.Drift
			sl.Drift, sl.Missing, sl.Extra, sl.Different = &d.Total, &d.Missing, &d.Extra, &d.Different
			for _, t := range d.Tables {
				sl.Tables = append(sl.Tables, tableDrift{Table: t.Table, Missing: t.Missing, Extra: t.Extra, Different: t.Different, SchemaDiffers: t.SchemaDiffers})
			}
		}
		return writeJSON(r.cfg.Stdout, sl)
	}
	var b strings.Builder
	resumed := ""
	if res.Resumed {
		resumed = fmt.Sprintf(", resuming from position %d", res.ResumedFrom)
	}
	rate := ""
	if s := res.Elapsed.Seconds(); s > 0 {
		rate = fmt.Sprintf(", %.0f events/s", float64(res.AppliedNow)/s)
	}
	if !res.DryRun {
		fmt.Fprintf(&b, "%s %s: rebuilt %d events up to position %d (watermark %d%s) in %s%s, verified, and swapped it in\n",
			r.cfg.Name, res.Projection, res.Applied, res.Checkpoint, res.Watermark, resumed, res.Elapsed.Round(time.Millisecond), rate)
	} else {
		d := res.Drift
		if d.Total == 0 {
			fmt.Fprintf(&b, "%s %s: no drift: the live read model equals a rebuild of %d events at position %d (nothing was swapped)\n",
				r.cfg.Name, res.Projection, res.Applied, res.Checkpoint)
		} else {
			fmt.Fprintf(&b, "%s %s: drift at position %d: %d rows (missing %d, extra %d, different %d); nothing was swapped\n",
				r.cfg.Name, res.Projection, res.Checkpoint, d.Total, d.Missing, d.Extra, d.Different)
		}
		for _, t := range d.Tables {
			note := ""
			if t.SchemaDiffers {
				note = " (its columns changed)"
			}
			fmt.Fprintf(&b, "  %s: missing %d, extra %d, different %d%s\n", t.Table, t.Missing, t.Extra, t.Different, note)
		}
	}
	_, err := io.WriteString(r.cfg.Stdout, b.String())
	return err
}

func round(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 1, 64), 64)
	return v
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
