package replay_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventlite/eventlite/projection"
	"github.com/eventlite/eventlite/replay"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// ledgerView is what a reader sees of the ledger in one snapshot.
type ledgerView struct {
	checkpoint, events, sum, last int64
	count, sumEntries, maxEntry   int64
	tampered                      bool
	exists                        bool
}

func readLedger(ctx context.Context, s *store.Store) (ledgerView, error) {
	var v ledgerView
	err := s.View(ctx, func(rt *store.ReadTx) error {
		// The checkpoint through the store's table, in the same snapshot:
		// a test may look at it directly.
		if err := rt.QueryRowContext(ctx, `SELECT COALESCE((SELECT position FROM checkpoints WHERE name = 'ledger'), 0)`).Scan(&v.checkpoint); err != nil {
			return err
		}
		var tampered int64
		err := rt.QueryRowContext(ctx, `SELECT events, sum, last_position, tampered FROM ledger_totals`).Scan(&v.events, &v.sum, &v.last, &tampered)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		v.exists, v.tampered = true, tampered == 1
		return rt.QueryRowContext(ctx, `SELECT count(*), COALESCE(sum(amount), 0), COALESCE(max(position), 0) FROM ledger_entries`).
			Scan(&v.count, &v.sumEntries, &v.maxEntry)
	})
	return v, err
}

func (v ledgerView) consistent() error {
	if v.events != v.count || v.sum != v.sumEntries || v.last != v.maxEntry || v.checkpoint != v.last {
		return fmt.Errorf("a mixed read model: %+v", v)
	}
	return nil
}

// TestSwapIsAtomic: while a runner keeps the ledger live and events keep
// coming, a replay rebuilds it and swaps it in. A reader reads the live
// tables and the checkpoint in snapshots all along: every snapshot is
// either the old read model or the new one, complete (the totals row
// agrees with the entries, and both with the checkpoint), never a mix.
// The old one is told apart by a tamper: its amounts, total included,
// were multiplied by ten, consistently, before the replay. After the
// swap the runner goes on from the new checkpoint: in the end the ledger
// is exactly the fold of the whole log, the events appended during the
// rebuild included.
func TestSwapIsAtomic(t *testing.T) {
	rng := newSeed(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := storetest.MustOpen(t, &store.Options{PollInterval: 5 * time.Millisecond})
	appendRandom(t, s, rng, 400)
	p := ledger("ledger", nil, nil)
	r, err := projection.NewRunner(s, p, &projection.RunnerOptions{BatchSize: 13})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run(ctx) }()
	head, _ := s.Head(ctx)
	if err := projection.WaitFor(ctx, s, "ledger", head); err != nil {
		t.Fatal(err)
	}
	execSQL(t, s, `UPDATE ledger_entries SET amount = amount * 10`, `UPDATE ledger_totals SET sum = sum * 10, tampered = 1`)

	// The appender: a batch of events at a time until told to stop.
	stopAppending := make(chan struct{})
	appended := make(chan struct{})
	appendRNG := newSeed(t)
	go func() {
		defer close(appended)
		for range 200 {
			select {
			case <-stopAppending:
				return
			default:
			}
			appendRandom(t, s, appendRNG, 3)
		}
	}()

	// The reader.
	var (
		olds, news atomic.Int64
		mixMu      sync.Mutex
		mixes      []error
	)
	sawOld, sawNew := make(chan struct{}), make(chan struct{})
	stopReading := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			select {
			case <-stopReading:
				return
			default:
			}
			v, err := readLedger(ctx, s)
			if err != nil {
				mixMu.Lock()
				mixes = append(mixes, err)
				mixMu.Unlock()
				return
			}
			if !v.exists {
				continue
			}
			if err := v.consistent(); err != nil {
				mixMu.Lock()
				mixes = append(mixes, err)
				mixMu.Unlock()
				continue
			}
			if v.tampered {
				if olds.Add(1) == 1 {
					close(sawOld)
				}
			} else if news.Add(1) == 1 {
				close(sawNew)
			}
		}
	}()
	<-sawOld
	res, err := replay.Rebuild(ctx, s, p, &replay.Options{BatchSize: 25})
	if err != nil {
		t.Fatal(err)
	}
	<-sawNew
	close(stopAppending)
	<-appended
	head, _ = s.Head(ctx)
	if err := projection.WaitFor(ctx, s, "ledger", head); err != nil {
		t.Fatal(err)
	}
	close(stopReading)
	<-readDone
	cancel()
	if err := <-runDone; err != nil {
		t.Errorf("the runner stopped with %v; it should have carried on after the swap", err)
	}
	t.Logf("rebuild %+v; the reader saw the old read model %d times and the new one %d times", res, olds.Load(), news.Load())
	mixMu.Lock()
	defer mixMu.Unlock()
	for i, m := range mixes {
		if i == 5 {
			t.Errorf("... and %d more", len(mixes)-5)
			break
		}
		t.Error(m)
	}
	checkLedgerIsFold(t, s, "ledger", nil)
}
