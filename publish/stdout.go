package publish

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sync"
)

// Stdout writes events as JSON Lines, one structured CloudEvent per line
// (the format of "eventlite tail"), to a writer: standard output for the
// CLI. It consumes the outbox like any destination. It has no dedupe: a
// redelivered event is printed again, with the same id.
type Stdout struct {
	mu  sync.Mutex
	out io.Writer
	w   *bufio.Writer
	buf []byte
}

var _ Publisher = (*Stdout)(nil)

// NewStdout returns a publisher that writes to w.
func NewStdout(w io.Writer) *Stdout {
	return &Stdout{out: w, w: bufio.NewWriterSize(w, 64<<10)}
}

// Publish writes each event as one line and flushes. A failed write makes
// every event of the call that was not flushed Unreachable: the writer is
// broken, not the events. An event that JSON cannot carry exactly
// (invalid UTF-8 in an attribute) is Permanent and is not written, nor
// are its stream's later events in the call. A line has no headers: the
// messages' per-hop Headers are dropped.
func (p *Stdout) Publish(ctx context.Context, msgs []Message) []Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	res := make([]Result, len(msgs))
	if err := ctx.Err(); err != nil {
		for i := range res {
			res[i].Err = err
		}
		return res
	}
	var (
		err    error
		failed map[streamKey]bool
	)
	for i := range msgs {
		k := keyOf(&msgs[i].Event)
		if failed[k] {
			res[i].Err = ErrNotAttempted
			continue
		}
		if cerr := checkJSONStrings(&msgs[i].Event); cerr != nil {
			res[i].Err = classed(Permanent, cerr)
			if failed == nil {
				failed = make(map[streamKey]bool)
			}
			failed[k] = true
			continue
		}
		p.buf = append(msgs[i].Event.AppendJSON(p.buf[:0]), '\n')
		if _, err = p.w.Write(p.buf); err != nil {
			break
		}
	}
	if err == nil {
		err = p.w.Flush()
	}
	if err != nil {
		// bufio keeps failing after an error: start afresh next time,
		// when the writer may work again. Lines that did get out are
		// repeated then, with their ids: delivery is at least once.
		p.w.Reset(p.out)
		err = classed(Unreachable, fmt.Errorf("write events: %w", err))
		for i := range res {
			if res[i].Err == nil {
				res[i].Err = err
			}
		}
	}
	return res
}

// Ping reports nil: a writer has nothing to ask.
func (p *Stdout) Ping(context.Context) error { return nil }

// Close flushes what is buffered.
func (p *Stdout) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.w.Flush()
}
