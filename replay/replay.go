package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventlite/eventlite/internal/leasing"
	"github.com/eventlite/eventlite/internal/tracing"
	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/store"
)

// Options configures Rebuild. nil means the defaults.
type Options struct {
	// DryRun rebuilds the shadow, compares it with the live read model at
	// the live checkpoint, reports the drift in Result.Drift, swaps
	// nothing and drops the shadow.
	DryRun bool
	// FromScratch drops any shadow an earlier run left and rebuilds from
	// position 0 under a new generation. Without it a run resumes from the
	// shadow's checkpoint.
	FromScratch bool
	// BatchSize fixes how many events one transaction applies to the
	// shadow. Default 0: it adapts, from 1,000, between 100 and 10,000
	// events so that a batch holds the writer (and keeps appends waiting)
	// for about 25ms at most.
	BatchSize int
	// LeaseTTL is how long the rebuild lease lasts without renewal; it is
	// renewed every LeaseTTL/3. Default 30s.
	LeaseTTL time.Duration
	// Owner names this replay in the lease. Default host:pid:random.
	Owner string
	// Progress, when set, is called after every batch and at each change
	// of phase, on Rebuild's goroutine; keep it quick.
	Progress func(Progress)
	// Logger receives structured logs. Default: none.
	Logger hclog.Logger
	// TracerProvider starts a "rebuild" span, a trace of its own with the
	// progress as span events. Default: otel's global provider.
	TracerProvider trace.TracerProvider
}

// Phase is a stage of a rebuild.
type Phase string

// The phases, in order. A dry run compares instead of swapping.
const (
	PhaseRebuild Phase = "rebuild"  // applying the log to the shadow up to the watermark
	PhaseCatchUp Phase = "catch-up" // applying what was appended since, up to the live head
	PhaseSwap    Phase = "swap"     // swapping the shadow in, in one transaction
	PhaseCompare Phase = "compare"  // dry run: comparing the shadow with the live read model
	PhaseDone    Phase = "done"
)

// Progress reports a rebuild's progress.
type Progress struct {
	Phase Phase
	// Done counts the events applied to the shadow, earlier runs' included.
	Done int64
	// Total counts the matching events up to Target: the events the shadow
	// holds when it gets there. It grows in the catch-up phase.
	Total int64
	// Rate is this run's events per second.
	Rate float64
	// Position is the shadow's checkpoint; Target the position it is
	// heading for (the watermark, then the live head).
	Position, Target int64
}

// Result describes a finished rebuild.
type Result struct {
	Projection string
	DryRun     bool
	// Generation names the shadow tables this run built.
	Generation int64
	// Resumed: this run continued a shadow an earlier run left, from
	// ResumedFrom.
	Resumed     bool
	ResumedFrom int64
	// Watermark is the log head when this run started (for a dry run the
	// live checkpoint, if that was lower): the shadow was verified there.
	Watermark int64
	// Checkpoint is the shadow's final position: the projection's
	// checkpoint after the swap, or the position a dry run compared at.
	Checkpoint int64
	// Applied counts the events in the shadow; AppliedNow those this run
	// applied.
	Applied, AppliedNow int64
	// Swapped: the shadow is now the live read model.
	Swapped bool
	// Drift is what a dry run found.
	Drift   Drift
	Elapsed time.Duration
}

// Drift is how the live read model differs from its rebuild.
type Drift struct {
	Missing   int64 // rows the rebuild has and the live read model lacks
	Extra     int64 // rows the live read model has and the rebuild lacks
	Different int64 // rows in both whose values differ
	Total     int64
	Tables    []TableDrift
}

// TableDrift is the drift of one table.
type TableDrift struct {
	Table string
	store.TableDiff
}

// ErrHandler is wrapped by the *HandlerError of a rebuild whose handler
// failed.
var ErrHandler = errors.New("handler failed during a rebuild")

// HandlerError says where a rebuild's handler failed. The live read model
// is untouched; the shadow keeps what was applied before the failing
// batch, so a rerun after the fix resumes there.
type HandlerError struct {
	Projection string
	Position   int64
	EventID    string
	Type       string
	Err        error
}

func (e *HandlerError) Error() string {
	return fmt.Sprintf("replay %s: the handler failed at position %d (event %s, type %s): %v; the live read model is untouched: fix the handler and run the replay again (it resumes before this event), or from scratch",
		e.Projection, e.Position, e.EventID, e.Type, e.Err)
}

// Unwrap lets errors.Is match ErrHandler and the handler's error.
func (e *HandlerError) Unwrap() []error { return []error{ErrHandler, e.Err} }

// ErrVerify is wrapped by the *VerifyError of a rebuild that did not
// prove it caught up.
var ErrVerify = errors.New("rebuild failed verification")

// VerifyError: the shadow did not reach the position it was built to, or
// holds another number of events than the log has up to there. Nothing
// was swapped.
type VerifyError struct {
	Projection string
	Checkpoint int64 // the shadow's
	Watermark  int64 // where it should be
	Applied    int64 // events applied to the shadow
	Expected   int64 // matching events in the log up to the watermark
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("replay %s: the shadow is at position %d with %d events applied, but the log has %d matching events up to %d; nothing was swapped: run the replay again from scratch",
		e.Projection, e.Checkpoint, e.Applied, e.Expected, e.Watermark)
}

// Unwrap lets errors.Is(err, ErrVerify) match.
func (e *VerifyError) Unwrap() error { return ErrVerify }

// ErrNotRebuildable: the projection has no tables in the store to rebuild
// (a Deliver projection, or one that declares no Tables). Permanent.
var ErrNotRebuildable = errors.New("projection cannot be rebuilt")

// Rebuild rebuilds p's read model from the log into shadow tables while
// the live read model keeps serving, verifies the shadow, catches it up
// and swaps it in with the projection's checkpoint in one transaction
// (see the package documentation). It holds the lease
// projection.RebuildLeaseResource(p.Name) throughout: a second replay of
// the same projection fails with an error matching store.ErrLeaseHeld.
//
// When ctx ends, Rebuild stops and returns an error matching ctx.Err();
// the next run resumes from the shadow's checkpoint. An event to apply
// that cannot be decrypted stops it the same way, the live read model
// untouched, with an error matching store.ErrMasterKey: a
// *store.EncryptedError (store.ErrNoMasterKey) when the store was opened
// without the master key, a *store.MasterKeyError for a wrong one.
func Rebuild(ctx context.Context, s *store.Store, p projection.Projection, opts *Options) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, err
	}
	if !p.Applies() || len(p.Tables) == 0 {
		return Result{}, fmt.Errorf("replay %s: %w: it keeps no tables in the store (only Handlers or Apply projections that declare their Tables can be rebuilt)", p.Name, ErrNotRebuildable)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BatchSize < 0 {
		o.BatchSize = 0
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.Owner == "" {
		o.Owner = leasing.DefaultOwner()
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	log := o.Logger.Named("replay." + p.Name)
	h := &leasing.Holder{Store: s, Resource: projection.RebuildLeaseResource(p.Name), Owner: o.Owner, TTL: o.LeaseTTL, Name: "rebuild lease", Log: log}
	lease, err := h.Acquire(ctx)
	if err != nil {
		if errors.Is(err, store.ErrLeaseHeld) {
			return Result{}, fmt.Errorf("replay %s: another replay is running: %w", p.Name, err)
		}
		return Result{}, fmt.Errorf("replay %s: %w", p.Name, err)
	}
	r := &rebuilder{s: s, p: p, o: o, log: log, lease: lease, h: h, start: time.Now(),
		trace: tracing.Config{TP: o.TracerProvider}}
	r.size.Store(firstBatch)
	if o.BatchSize > 0 {
		r.size.Store(int64(o.BatchSize))
	}
	defer r.release()
	res, err := r.run(r.startSpan(ctx))
	r.endSpan(err)
	res.Elapsed = time.Since(r.start)
	if cause := ctx.Err(); err != nil && cause != nil {
		const msg = "replay %s interrupted with the shadow at position %d: the live read model is untouched; run the replay again to resume: %w"
		if errors.Is(err, cause) {
			err = fmt.Errorf(msg, p.Name, r.row.Checkpoint, err)
		} else {
			err = fmt.Errorf(msg+" (%w)", p.Name, r.row.Checkpoint, cause, err)
		}
	}
	return res, err
}
