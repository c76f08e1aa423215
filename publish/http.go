package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	ceclient "github.com/cloudevents/sdk-go/v2/client"
	"github.com/cloudevents/sdk-go/v2/protocol"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/hashicorp/go-hclog"

	"github.com/eventlite/eventlite/envelope"
)

// HTTPOptions configures NewHTTP. Zero fields take the documented
// defaults.
type HTTPOptions struct {
	// URL is the sink, http:// or https://. Required.
	URL string
	// Structured sends each event as one structured CloudEvent JSON body
	// (application/cloudevents+json). Default: binary mode, the data as
	// the body and the attributes as ce- headers.
	Structured bool
	// Timeout bounds each request. Default 10s.
	Timeout time.Duration
	// Concurrency is how many streams are sent at once; one stream's
	// events go one at a time, in order. Default 16.
	Concurrency int
	// Client is the HTTP client. Default: a client of its own.
	Client *http.Client
	// Logger receives structured logs. Default: none.
	Logger hclog.Logger
}

// HTTP posts events to a CloudEvents HTTP sink with sdk-go's HTTP client.
// A 2xx response is success; 408, 429 and 5xx are Transient; any other
// status is Permanent; a sink that cannot be connected to is Unreachable.
// A sink that closes the connection while it handles an event, or does
// not answer within the timeout, fails that event Transient: the relay
// counts the attempt unless the sink turns out to be down (every request
// of the round failed and it does not answer a ping). An event whose
// attributes the chosen mode cannot carry exactly (a control character in
// a header, invalid UTF-8 in JSON) is Permanent and is not sent.
// HTTP has no dedupe of its own: a redelivered event carries the same id
// (ce-id), which the sink's inbox dedupes.
type HTTP struct {
	opts   HTTPOptions
	client ceclient.Client
	http   *http.Client
	log    hclog.Logger
}

var _ Publisher = (*HTTP)(nil)

// NewHTTP returns an HTTP publisher. It does not contact the sink, so a
// program may call it to check a URL before it opens anything else.
func NewHTTP(opts HTTPOptions) (*HTTP, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("HTTP destination %q: want an http:// or https:// URL with a host", opts.URL)
	}
	if err := checkPort(u); err != nil {
		return nil, fmt.Errorf("HTTP destination %q: %w", opts.URL, err)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 16
	}
	if opts.Timeout < 0 || opts.Concurrency < 0 {
		return nil, errors.New("publish: HTTPOptions fields must not be negative")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	hc := opts.Client
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = opts.Concurrency
		hc = &http.Client{Transport: t}
	}
	proto, err := cehttp.New(cehttp.WithTarget(opts.URL), cehttp.WithClient(*hc))
	if err != nil {
		return nil, fmt.Errorf("HTTP destination %s: %w", opts.URL, err)
	}
	c, err := ceclient.New(proto)
	if err != nil {
		return nil, fmt.Errorf("HTTP destination %s: %w", opts.URL, err)
	}
	return &HTTP{opts: opts, client: c, http: hc, log: opts.Logger.Named("http")}, nil
}

// Publish sends the events: streams side by side, up to Concurrency at a
// time, and each stream's events one after the other, stopping at the
// stream's first failure. When the sink turns out unreachable, nothing
// more is sent. Each message's Headers go out as HTTP headers beside the
// event's.
func (p *HTTP) Publish(ctx context.Context, msgs []Message) []Result {
	res := make([]Result, len(msgs))
	if len(msgs) == 0 {
		return res
	}
	// The events of each stream, in order; streams in order of their
	// first event.
	var (
		order   []streamKey
		streams = make(map[streamKey][]int)
	)
	for i := range msgs {
		k := keyOf(&msgs[i].Event)
		if _, ok := streams[k]; !ok {
			order = append(order, k)
		}
		streams[k] = append(streams[k], i)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu   sync.Mutex
		down error // set when the sink is unreachable
		wg   sync.WaitGroup
		next = make(chan []int)
	)
	worker := func() {
		defer wg.Done()
		for idx := range next {
			for n, i := range idx {
				mu.Lock()
				d := down
				mu.Unlock()
				if d != nil {
					for _, j := range idx[n:] {
						res[j].Err = ErrNotAttempted
					}
					break
				}
				err := p.send(ctx, &msgs[i].Event, msgs[i].Headers)
				res[i].Err = err
				if err == nil {
					continue
				}
				if ClassOf(err) == Unreachable {
					mu.Lock()
					down = err
					mu.Unlock()
				}
				for _, j := range idx[n+1:] {
					res[j].Err = ErrNotAttempted
				}
				break
			}
		}
	}
	workers := min(p.opts.Concurrency, len(order))
	wg.Add(workers)
	for range workers {
		go worker()
	}
	for _, k := range order {
		next <- streams[k]
	}
	close(next)
	wg.Wait()
	return res
}

// send posts one event, with the per-hop trace headers hop, and
// classifies the outcome.
func (p *HTTP) send(ctx context.Context, e *envelope.Event, hop map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	if p.opts.Structured {
		rctx = binding.WithForceStructured(rctx)
	} else {
		rctx = binding.WithForceBinary(rctx)
	}
	check := checkHTTPHeaders
	if p.opts.Structured {
		check = checkJSONStrings
	}
	if err := check(e); err != nil {
		return classed(Permanent, err)
	}
	if len(hop) > 0 {
		h := make(http.Header, len(hop))
		for k, v := range hop {
			h.Set(k, v)
		}
		rctx = cehttp.WithCustomHeader(rctx, h)
	}
	ce := e.ToCloudEvent()
	r := p.client.Send(rctx, ce)
	if protocol.IsACK(r) {
		return nil
	}
	var hr *cehttp.Result
	if protocol.ResultAs(r, &hr) {
		// Only the status: the sink's reply body may echo the event's
		// data, and this text is recorded (outbox.last_error, dead
		// letters) and logged, where a forget would not reach it.
		err := fmt.Errorf("POST %s: HTTP %d %s: the sink refused the event (its reply is not recorded)", p.opts.URL, hr.StatusCode, http.StatusText(hr.StatusCode))
		switch sc := hr.StatusCode; {
		case sc == http.StatusRequestTimeout, sc == http.StatusTooManyRequests, sc >= 500:
			return classed(Transient, err)
		default:
			return classed(Permanent, err)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err() // the caller stopped: not the event's failure
	}
	err := fmt.Errorf("POST %s: %w", p.opts.URL, r)
	if unreachable(r) {
		return classed(Unreachable, err)
	}
	if errors.Is(r, context.DeadlineExceeded) {
		return classed(Transient, fmt.Errorf("event %s: no answer within %s: %w", e.ID, p.opts.Timeout, err))
	}
	if dropped(r) {
		// A sink that went down resets the connections it had open: if
		// a new connection cannot be made either, it is the sink, not
		// the event.
		if perr := p.Ping(ctx); perr != nil && ClassOf(perr) == Unreachable {
			return classed(Unreachable, fmt.Errorf("%w (and then %v)", err, perr))
		}
		return classed(Transient, fmt.Errorf("event %s: the sink closed the connection while handling it: %w", e.ID, err))
	}
	if protocol.IsUndelivered(r) && !isNetError(r) {
		// sdk-go refused the event before sending it (validation,
		// encoding): it will refuse it again.
		return classed(Permanent, fmt.Errorf("event %s cannot be sent over HTTP: %w", e.ID, r))
	}
	return classed(Transient, err)
}

// unreachable reports whether err says the sink could not be connected
// to: a failed dial, a refused connection, an unknown host. A connection
// that broke once the request was on its way is not one of these (see
// dropped): the event may be what the sink cannot take.
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &dns) ||
		errors.Is(err, syscall.ECONNREFUSED)
}

// dropped reports whether err says the sink closed or reset the
// connection during the request. Whether the sink is down or the event
// made it drop the connection, the relay tells apart: it pings the sink
// when every request of a round failed.
func dropped(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func isNetError(err error) bool {
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue)
}

// Ping asks the sink for OPTIONS (the CloudEvents webhook handshake): any
// answer below 500 means it is up.
func (p *HTTP) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodOptions, p.opts.URL, nil)
	if err != nil {
		return classed(Fatal, err)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return classed(Unreachable, fmt.Errorf("OPTIONS %s: %w", p.opts.URL, err))
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return classed(Unreachable, fmt.Errorf("OPTIONS %s: HTTP %d", p.opts.URL, resp.StatusCode))
	}
	return nil
}

// Close closes idle connections.
func (p *HTTP) Close() error {
	p.http.CloseIdleConnections()
	return nil
}

// checkPort refuses a port that is not a number from 1 to 65535 (url.Parse
// takes any digits).
func checkPort(u *url.URL) error {
	p := u.Port()
	if p == "" {
		return nil
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	return nil
}
