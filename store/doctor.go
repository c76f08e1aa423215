package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// Finding severities.
const (
	SeverityProblem = "problem" // needs a person
	SeverityInfo    = "info"    // worth knowing, not wrong
)

// Finding is one thing reconciliation found, with the ids to act on.
type Finding struct {
	Kind             string   `json:"kind"`
	Severity         string   `json:"severity"`
	Count            int64    `json:"count"`
	OldestAgeSeconds float64  `json:"oldest_age_seconds"`
	IDs              []string `json:"ids"`
	// Detail says what it means and what to do, for people.
	Detail string `json:"-"`
}

// DiagnoseOptions bound what counts as too old. Zero values mean the
// defaults.
type DiagnoseOptions struct {
	// OutboxAge: events unpublished for longer than this are a problem
	// once a relay has run on the store. Default 5 minutes.
	OutboxAge time.Duration
	// ExecutingAge: effects EXECUTING longer than this are stuck. Default
	// 10 minutes.
	ExecutingAge time.Duration
	// ApprovalAge: effects AWAITING_APPROVAL longer than this wait for a
	// person. Default 24 hours.
	ApprovalAge time.Duration
	// ApprovedAge: effects APPROVED longer than this have not run: no Do
	// with their key came, and no ResumeApproved. Default 1 hour.
	ApprovedAge time.Duration
	// DeferralAge: deferred external events older than this. Default 10
	// minutes.
	DeferralAge time.Duration
	// ProjectionLag: a running projection whose oldest unapplied event is
	// older than this is lagging. Default 1 minute.
	ProjectionLag time.Duration
	// OnDemand names projections brought up to date on demand (such as
	// catalog): no runner is expected, so their lag is not reported.
	OnDemand []string
	// MaxIDs caps the ids listed per finding. Default 20.
	MaxIDs int
}

func (o DiagnoseOptions) withDefaults() DiagnoseOptions {
	if o.OutboxAge <= 0 {
		o.OutboxAge = 5 * time.Minute
	}
	if o.ExecutingAge <= 0 {
		o.ExecutingAge = 10 * time.Minute
	}
	if o.ApprovalAge <= 0 {
		o.ApprovalAge = 24 * time.Hour
	}
	if o.ApprovedAge <= 0 {
		o.ApprovedAge = time.Hour
	}
	if o.DeferralAge <= 0 {
		o.DeferralAge = 10 * time.Minute
	}
	if o.ProjectionLag <= 0 {
		o.ProjectionLag = time.Minute
	}
	if o.MaxIDs <= 0 {
		o.MaxIDs = 20
	}
	return o
}

// finding accumulates one kind of finding.
type finding struct {
	Finding
	max    int
	oldest time.Time
}

func newFinding(kind, severity string, max int) *finding {
	return &finding{Finding: Finding{Kind: kind, Severity: severity, IDs: []string{}}, max: max}
}

func (f *finding) add(id string, at time.Time) {
	f.Count++
	if len(f.IDs) < f.max {
		f.IDs = append(f.IDs, id)
	}
	if !at.IsZero() && (f.oldest.IsZero() || at.Before(f.oldest)) {
		f.oldest = at
	}
}

func (f *finding) done(now time.Time, detail string) Finding {
	if !f.oldest.IsZero() {
		f.OldestAgeSeconds = max(now.Sub(f.oldest).Seconds(), 0)
	}
	f.Detail = detail
	return f.Finding
}

// Diagnose scans the store for what slipped past the online protocols:
// stale outbox rows, dead letters and parked streams, unknown or stuck
// effects, expired leases with work waiting behind them, old deferrals,
// quarantined events, version conflicts, stopped or lagging projections,
// global-position holes and per-stream version gaps. It reports only what
// it found; a healthy store gives no finding of severity "problem".
func (s *Store) Diagnose(ctx context.Context, opts DiagnoseOptions) ([]Finding, error) {
	o := opts.withDefaults()
	now := s.opts.Now()
	var out []Finding
	emit := func(f *finding, detail string) {
		if f.Count > 0 {
			out = append(out, f.done(now, detail))
		}
	}
	steps := []func() error{
		func() error { return s.diagnoseOutbox(ctx, o, now, emit) },
		func() error { return s.diagnoseEffects(ctx, o, now, emit) },
		func() error { return s.diagnoseLeases(ctx, o, emit) },
		func() error { return s.diagnoseConsumers(ctx, o, now, emit) },
		func() error { return s.diagnoseProjections(ctx, o, now, emit) },
		func() error { return s.diagnoseLog(ctx, o, emit) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("diagnose: %w", err)
		}
	}
	return out, nil
}

func (s *Store) relayHasRun(ctx context.Context) (bool, error) {
	ran, err := s.ex.RelayHasRun(ctx, s.rdb)
	return ran, mapErr(err)
}

func (s *Store) diagnoseOutbox(ctx context.Context, o DiagnoseOptions, now time.Time, emit func(*finding, string)) error {
	ran, err := s.relayHasRun(ctx)
	if err != nil {
		return err
	}
	stale := newFinding("outbox_stale", SeverityProblem, o.MaxIDs)
	before := now.Add(-o.OutboxAge).UnixNano()
	if !ran {
		stale = newFinding("outbox_pending", SeverityInfo, o.MaxIDs)
		before = now.UnixNano() + 1
	}
	err = s.ex.EachPendingOutbox(ctx, s.rdb, before, func(tenant, id string, at int64) error {
		stale.add(tenant+":"+id, time.Unix(0, at))
		return nil
	})
	if err != nil {
		return mapErr(err)
	}
	if ran {
		emit(stale, fmt.Sprintf("events unpublished for longer than %s: is a relay running (eventlite relay)? its logs say why rows are held", o.OutboxAge))
	} else {
		emit(stale, "events wait in the outbox; no relay has run on this store yet (eventlite relay --to ...)")
	}
	dead, err := s.deadLetters(ctx, "")
	if err != nil {
		return err
	}
	df := newFinding("dead_letters", SeverityProblem, o.MaxIDs)
	for _, d := range dead {
		df.add(d.Tenant+":"+d.EventID, d.FirstFailed)
	}
	emit(df, "events the relay gave up on: eventlite dlq list, then dlq retry (after fixing the cause) or dlq discard")
	parked, err := s.parkedStreams(ctx, "")
	if err != nil {
		return err
	}
	pf := newFinding("parked_streams", SeverityProblem, o.MaxIDs)
	for _, p := range parked {
		pf.add(p.Tenant+"/"+p.Stream, time.Time{})
	}
	emit(pf, "streams whose later events wait behind a dead letter: resolve it with eventlite dlq retry or discard")
	return nil
}

func (s *Store) diagnoseEffects(ctx context.Context, o DiagnoseOptions, now time.Time, emit func(*finding, string)) error {
	// The rows as stored: the states and times doctor reads are never
	// sealed, so no data key is needed.
	effects, err := inner{s}.EffectRows(ctx, "", []string{effectUnknown, effectExecuting, effectAwaitingApproval, effectApproved})
	if err != nil {
		return err
	}
	unknown := newFinding("effects_unknown", SeverityProblem, o.MaxIDs)
	stuck := newFinding("effects_stuck", SeverityProblem, o.MaxIDs)
	awaiting := newFinding("effects_awaiting_approval", SeverityProblem, o.MaxIDs)
	approved := newFinding("effects_approved_not_run", SeverityProblem, o.MaxIDs)
	at := func(ns int64) time.Time { return time.Unix(0, ns).UTC() }
	for _, e := range effects {
		id := e.Tenant + ":" + e.Key
		switch {
		case e.State == effectUnknown:
			unknown.add(id, at(e.UpdatedAt))
		case e.State == effectExecuting && at(e.StartedAt).Before(now.Add(-o.ExecutingAge)):
			stuck.add(id, at(e.StartedAt))
		case e.State == effectAwaitingApproval && at(e.RequestedAt).Before(now.Add(-o.ApprovalAge)):
			awaiting.add(id, at(e.RequestedAt))
		case e.State == effectApproved && at(e.DecidedAt).Before(now.Add(-o.ApprovedAge)):
			approved.add(id, at(e.DecidedAt))
		}
	}
	emit(unknown, "external effects that may or may not have happened: reconcile them with the provider (effect.Ledger.Reconcile); never retry them blindly")
	emit(stuck, fmt.Sprintf("external effects EXECUTING for longer than %s: the worker probably died mid-call; reconcile them", o.ExecutingAge))
	emit(awaiting, fmt.Sprintf("effects waiting longer than %s for a person's approval: 'eventlite effects list --awaiting', then 'effects approve KEY --args-hash HASH' or 'effects reject KEY'", o.ApprovalAge))
	emit(approved, fmt.Sprintf("effects approved more than %s ago that have not run: is the service that runs them up? (effect.Ledger.ResumeApproved runs them)", o.ApprovedAge))
	return nil
}

func (s *Store) diagnoseLeases(ctx context.Context, o DiagnoseOptions, emit func(*finding, string)) error {
	leases, err := s.Leases().List(ctx)
	if err != nil {
		return err
	}
	f := newFinding("leases_expired", SeverityProblem, o.MaxIDs)
	for _, l := range leases {
		if l.Owner == "" || !l.Expired {
			continue // released by a clean exit, or live
		}
		waiting, err := s.workBehindLease(ctx, l.Resource)
		if err != nil {
			return err
		}
		if waiting {
			f.add(l.Resource+" ("+l.Owner+")", l.ExpiresAt)
		}
	}
	emit(f, "a worker's lease expired while work waits behind it: the worker died or hangs; start another (it takes over the lease)")
	return nil
}

// workBehindLease reports whether the work a lease guards has something
// waiting: pending events for the relay, unapplied events for a
// projection.
func (s *Store) workBehindLease(ctx context.Context, resource string) (bool, error) {
	var waiting bool
	var err error
	switch {
	case resource == "relay":
		waiting, err = s.ex.RelayBacklog(ctx, s.rdb)
	case len(resource) > len("projection:") && resource[:len("projection:")] == "projection:":
		waiting, err = s.ex.ProjectionBacklog(ctx, s.rdb, resource[len("projection:"):])
	default:
		return false, nil
	}
	return waiting, mapErr(err)
}

func (s *Store) diagnoseConsumers(ctx context.Context, o DiagnoseOptions, now time.Time, emit func(*finding, string)) error {
	deferred, err := s.deferred(ctx, "", now.Add(-o.DeferralAge))
	if err != nil {
		return err
	}
	df := newFinding("deferred_old", SeverityProblem, o.MaxIDs)
	for _, d := range deferred {
		df.add(d.Consumer+"/"+d.Tenant+"/"+d.Subject+"@"+strconv.FormatInt(d.Version, 10), d.FirstSeen)
	}
	emit(df, fmt.Sprintf("outside events waiting longer than %s for a version gap to fill: run the consumer's sweep, which quarantines them with the evidence", o.DeferralAge))
	q, err := s.quarantinedEvents(ctx, "", true)
	if err != nil {
		return err
	}
	qf := newFinding("quarantined", SeverityProblem, o.MaxIDs)
	refused := 0 // by the engine as text: statementError's hint
	for _, e := range q {
		id := e.Consumer + ":" + e.EventID
		if e.Position > 0 {
			id += "@" + strconv.FormatInt(e.Position, 10)
		}
		qf.add(id, e.CreatedAt)
		if strings.Contains(e.Error, handlerSQLDoc) {
			refused++
		}
	}
	detail := "events set aside for a person (a handler kept failing, an event nobody can interpret, a gap that never filled): fix the cause, then 'eventlite quarantine retry NAME EVENT-ID' (a stopped projection resumes at its event when restarted), or give the event up with 'eventlite quarantine skip NAME EVENT-ID'; 'eventlite quarantine list' shows them"
	if refused > 0 {
		detail += fmt.Sprintf("; %d failed on a statement the engine refused (a syntax error, an ambiguous or unknown column: often SQL written for the other engine): see %s", refused, handlerSQLDoc)
	}
	emit(qf, detail)
	conflicts, err := s.conflicts(ctx, "")
	if err != nil {
		return err
	}
	cf := newFinding("version_conflicts", SeverityProblem, o.MaxIDs)
	for _, c := range conflicts {
		cf.add(c.Consumer+"/"+c.Tenant+"/"+c.Subject+"@"+strconv.FormatInt(c.Version, 10)+": "+c.KeptEventID+" vs "+c.ConflictingID, c.CreatedAt)
	}
	emit(cf, "two different events claimed one version of an aggregate: the first was kept; compare them and fix the producer")
	return nil
}

func (s *Store) diagnoseProjections(ctx context.Context, o DiagnoseOptions, now time.Time, emit func(*finding, string)) error {
	recs, err := s.projections(ctx, "")
	if err != nil {
		return err
	}
	onDemand := map[string]bool{}
	for _, n := range o.OnDemand {
		onDemand[n] = true
	}
	stopped := newFinding("projections_stopped", SeverityProblem, o.MaxIDs)
	lagging := newFinding("projections_lagging", SeverityProblem, o.MaxIDs)
	idle := newFinding("projections_idle", SeverityInfo, o.MaxIDs)
	orphaned := newFinding("projections_orphaned", SeverityProblem, o.MaxIDs)
	for _, r := range recs {
		if r.Status == projectionStopped {
			stopped.add(r.Name, r.UpdatedAt)
			continue
		}
		if onDemand[r.Name] {
			continue // its next reader takes an orphaned lease over
		}
		if r.Orphaned && r.Status != projectionRebuilding {
			orphaned.add(r.Name+" ("+r.LeaseOwner+")", now.Add(-r.LeaseExpiredFor))
			continue
		}
		first, ok, err := s.ex.FirstRecordedAfter(ctx, s.rdb, r.Checkpoint)
		if err != nil {
			return mapErr(err)
		}
		if !ok {
			continue // caught up
		}
		at := time.Unix(0, first)
		switch {
		case !r.LeaseLive:
			idle.add(r.Name, at)
		case at.Before(now.Add(-o.ProjectionLag)):
			lagging.add(r.Name, at)
		}
	}
	emit(stopped, "projections halted on a quarantined event: fix the handler and restart the runner (it resumes at that event), or give the event up with 'eventlite quarantine skip NAME EVENT-ID'")
	emit(orphaned, "projections whose lease is held by a process on this host that is gone, expired for over a lease period with no runner taking it over: start a runner")
	emit(lagging, fmt.Sprintf("projections whose runner is more than %s behind the log: look at the runner's logs and load", o.ProjectionLag))
	emit(idle, "projections behind the log with no runner holding their lease")
	return nil
}

func (s *Store) diagnoseLog(ctx context.Context, o DiagnoseOptions, emit func(*finding, string)) error {
	head, err := s.Head(ctx)
	if err != nil {
		return err
	}
	holes, err := s.holesBetween(ctx, 0, head)
	if err != nil {
		return err
	}
	restored, err := s.restoreGaps(ctx)
	if err != nil {
		return err
	}
	hf := newFinding("position_holes", SeverityProblem, o.MaxIDs)
	rf := newFinding("position_holes_restore", SeverityInfo, o.MaxIDs)
	for _, h := range holes {
		id := strconv.FormatInt(h.From, 10) + "-" + strconv.FormatInt(h.To, 10)
		if coveredBy(h, restored) {
			rf.add(id, time.Time{})
		} else {
			hf.add(id, time.Time{})
		}
	}
	emit(hf, "global positions missing between stored events that no scavenge removed: the file was changed behind eventlite's back; restore it from a backup")
	emit(rf, "positions the file had handed out before it was restored from an older backup: they are never used again")
	gaps := newFinding("stream_version_gaps", SeverityProblem, o.MaxIDs)
	err = s.ex.EachVersionGap(ctx, s.rdb, func(tenant, stream string) error {
		gaps.add(tenant+"/"+stream, time.Time{})
		return nil
	})
	if err != nil {
		return mapErr(err)
	}
	emit(gaps, "streams whose versions are not 1..n (but for the versions a scavenge removed before where their reads start): events were removed or changed behind eventlite's back; restore from a backup")
	// The version gaps a restore recorded: information, as its hole is.
	if files, ok := s.ex.(driver.Files); ok {
		restoredGaps, err := files.VersionGapsDetectedBy(ctx, s.rdb, HoleRestore)
		if err != nil {
			return mapErr(err)
		}
		rg := newFinding("stream_version_gaps_restore", SeverityInfo, o.MaxIDs)
		for _, g := range restoredGaps {
			rg.add(fmt.Sprintf("%s/%s:%d-%d", g.Tenant, g.Stream, g.Have+1, g.Had), time.Time{})
		}
		emit(rg, "stream versions the file had handed out before it was restored from an older backup (tenant/stream:from-to): never handed out again; each stream's "+TypeStreamRestored+" event says so downstream")
	}
	deleted, err := s.ex.DeletedStreams(ctx, s.rdb, ReservedStreamPrefix)
	if err != nil {
		return mapErr(err)
	}
	own := newFinding("own_stream_deleted", SeverityProblem, o.MaxIDs)
	for _, d := range deleted {
		kind := "soft"
		if d.Mark == deletedHard {
			kind = "hard"
		}
		own.add(d.Tenant+"/"+d.Stream+" ("+kind+")", time.Time{})
	}
	emit(own, "streams of the store's own (ids starting with "+ReservedStreamPrefix+") that a user deleted, which an older eventlite allowed; while "+
		forgottenStream+" was hard-deleted, every forget in its tenant failed (exit 4) and the subject's data stayed readable. "+
		"To repair, run eventlite forget SUBJECT --tenant TENANT again for each subject whose forget failed "+
		"(or, if none did, once more for a subject forgotten before): forget restores the stream first")
	tags, err := checkTagIndex(ctx, s.ex, s.rdb)
	if err != nil {
		return err
	}
	bad := newFinding("tags_invalid", SeverityProblem, o.MaxIDs)
	for _, p := range tags.invalid {
		bad.add(strconv.FormatInt(p, 10), time.Time{})
	}
	emit(bad, "events (by position) whose "+envelope.ExtTags+" extension does not decode as tags: it was stored as an extension of that name before eventlite carried tags in it. "+
		"No query or condition matches them. To repair, append their successors with the tags meant, or leave them: they read with the value as an extension")
	unindexed := newFinding("tags_unindexed", SeverityProblem, o.MaxIDs)
	for _, p := range tags.unindexed {
		unindexed.add(strconv.FormatInt(p, 10), time.Time{})
	}
	if tags.stray > 0 {
		unindexed.add("stray index rows: "+strconv.FormatInt(tags.stray, 10), time.Time{})
	}
	emit(unindexed, "events (by position) whose tags are not in the tag index, or index rows of no event's tags: the file was changed behind eventlite's back; restore it from a backup")
	uses, err := s.ex.MasterKeys(ctx, s.rdb)
	if err != nil {
		return mapErr(err)
	}
	mixed := newFinding("master_keys_mixed", SeverityProblem, o.MaxIDs)
	if len(uses) > 1 {
		for _, u := range uses {
			mixed.add(hex.EncodeToString(u.ID)+" wraps "+strconv.FormatInt(u.Keys, 10)+" data keys", time.Time{})
		}
	}
	emit(mixed, "the data keys are wrapped by more than one master key, which an older eventlite allowed: a store uses one, "+
		"and a relay or projection with either key stops at an event of the other. To repair, keep one master key and, for each subject "+
		"whose key the other wraps, run eventlite forget SUBJECT (its data is then erased), or restore a backup taken before the other key was used")
	return nil
}
