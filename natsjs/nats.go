package natsjs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
)

// DefaultStream is the default JetStream stream name.
const DefaultStream = "EVENTLITE"

// ErrNoStream: the JetStream stream does not exist, and Options did
// not say to create it. The error is Fatal.
var ErrNoStream = errors.New("JetStream stream not found")

// DefaultMaxControlLine is nats-server's default max_control_line
// (MAX_CONTROL_LINE_SIZE): the longest publish line it reads, in bytes.
const DefaultMaxControlLine = 4096

// DuplicateWindow is the dedupe window of a stream that NATS creates
// (Options.CreateStream). JetStream dedupes by message id only within
// its stream's window.
const DuplicateWindow = 10 * time.Minute

// Options configures NewPublisher. Zero fields take the documented
// defaults.
type Options struct {
	// URL is the NATS server, nats://HOST:PORT. Required unless Conn is
	// set.
	URL string
	// Conn is a connection to use instead of dialling URL; Close leaves
	// it open. It should disable the reconnect buffer
	// (nats.ReconnectBufSize(-1)) so that a publish while disconnected
	// fails at once instead of waiting for its ack timeout.
	Conn *nats.Conn
	// Stream is the JetStream stream the events must land in. Default
	// DefaultStream.
	Stream string
	// Subject is the subject template: literal text with the placeholders
	// {tenant}, {type} and {stream}, each in a token of its own, whose
	// values are escaped: each byte of '.', '*', '>', '_', white space, a
	// control character or invalid UTF-8 is written as '_' and two
	// uppercase hex digits ("a.b" becomes "a_2Eb"), every other byte is
	// kept, and an empty value is EmptyToken.
	// Default DefaultSubject.
	Subject string
	// CreateStream creates the stream when it is missing: file storage,
	// subjects the template's fixed prefix + ">", a DuplicateWindow dedupe
	// window. Otherwise a missing stream is a Fatal error.
	CreateStream bool
	// AckTimeout bounds the wait for each publish ack. Default 5s.
	AckTimeout time.Duration
	// MaxInFlight caps the publishes awaiting their acks. Default 4096.
	MaxInFlight int
	// MaxControlLine is the server's max_control_line, which bounds the
	// publish line (subject, reply subject and sizes) and which the server
	// does not announce. A message whose line would pass it is Permanent
	// (a server that read it would close the connection). Default
	// DefaultMaxControlLine, nats-server's default.
	MaxControlLine int
	// RequireConnect makes NewPublisher fail when the server at URL does not
	// answer its first connection attempt, so that a wrong URL is caught
	// at start. Default false: NewPublisher logs a warning naming the URL and
	// the cause and returns a publisher that keeps retrying (Publish
	// reports Unreachable until the server answers). Ignored with Conn.
	RequireConnect bool
	// Logger receives structured logs. Default: none.
	Logger hclog.Logger
}

// ParseURL reads the CLI's destination form
// nats://HOST:PORT[?stream=NAME&subject=TEMPLATE] into options (URL,
// Stream, Subject; the rest zero). It checks the port and the subject
// template, so that a program can refuse a malformed destination before
// it opens anything.
func ParseURL(s string) (Options, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Options{}, fmt.Errorf("NATS destination %q: %w", s, err)
	}
	if u.Scheme != "nats" && u.Scheme != "tls" {
		return Options{}, fmt.Errorf("NATS destination %q: want nats://HOST:PORT", s)
	}
	if u.Host == "" || u.Hostname() == "" {
		return Options{}, fmt.Errorf("NATS destination %q: no host", s)
	}
	if err := checkPort(u); err != nil {
		return Options{}, fmt.Errorf("NATS destination %q: %w", s, err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Options{}, fmt.Errorf("NATS destination %q: %w", s, err)
	}
	o := Options{Stream: q.Get("stream"), Subject: q.Get("subject")}
	for k := range q {
		if k != "stream" && k != "subject" {
			return Options{}, fmt.Errorf("NATS destination %q: unknown parameter %q (want stream and subject)", s, k)
		}
	}
	if q.Has("stream") && o.Stream == "" || q.Has("subject") && o.Subject == "" {
		return Options{}, fmt.Errorf("NATS destination %q: empty stream or subject", s)
	}
	if strings.ContainsAny(o.Stream, ".*>/\\ \t\r\n") {
		return Options{}, fmt.Errorf("NATS destination %q: stream name %q holds '.', '*', '>', a slash or white space, which JetStream refuses", s, o.Stream)
	}
	if o.Subject != "" {
		if _, err := parseSubject(o.Subject); err != nil {
			return Options{}, fmt.Errorf("NATS destination %q: %w", s, err)
		}
	}
	u.RawQuery, u.Fragment = "", ""
	o.URL = u.String()
	return o, nil
}

// NATS publishes events to a NATS JetStream stream, pipelined: it sends a
// whole batch before it awaits the acks (awaiting each ack in turn runs at
// a sixth of the broker's rate). Each message carries the event in
// CloudEvents binary mode (ce- headers, encoded with sdk-go's binding) and
// the header Nats-Msg-Id = "<tenant>:<event id>", unique across tenants,
// so that JetStream stores one copy of an event however often it is
// published within the stream's duplicate window. An ack that says
// duplicate counts as delivered; the ack's stream sequence is returned.
type Publisher struct {
	opts    Options
	nc      *nats.Conn
	ownConn bool
	js      jetstream.JetStream
	subject subjectTemplate
	log     hclog.Logger
	// replyLen is the length of the reply subject of every publish:
	// nats.go's jetstream package writes its inbox prefix, six
	// characters, '.', and six more.
	replyLen int

	mu      sync.Mutex
	checked bool // the stream was found or created

	closing atomic.Bool   // Close was called
	closed  chan struct{} // closed by the connection's last callback
}

var _ publish.Publisher = (*Publisher)(nil)

// NewPublisher connects to the server (or takes opts.Conn) and checks the
// stream, creating it when opts.CreateStream says so. A server that cannot
// be reached is logged at warn level with the cause, and, unless
// opts.RequireConnect is set (then NewPublisher fails, Unreachable), does not
// fail it: the connection keeps retrying and Publish reports Unreachable
// until it is up, then checks the stream.
func NewPublisher(ctx context.Context, opts Options) (*Publisher, error) {
	if opts.Stream == "" {
		opts.Stream = DefaultStream
	}
	if opts.Subject == "" {
		opts.Subject = DefaultSubject
	}
	if opts.AckTimeout == 0 {
		opts.AckTimeout = 5 * time.Second
	}
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = 4096
	}
	if opts.MaxControlLine == 0 {
		opts.MaxControlLine = DefaultMaxControlLine
	}
	if opts.AckTimeout < 0 || opts.MaxInFlight < 0 || opts.MaxControlLine < 0 {
		return nil, errors.New("natsjs: Options fields must not be negative")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	tmpl, err := parseSubject(opts.Subject)
	if err != nil {
		return nil, err
	}
	if opts.CreateStream {
		if _, err := tmpl.streamSubjects(); err != nil {
			return nil, err
		}
	}
	p := &Publisher{opts: opts, subject: tmpl, log: opts.Logger.Named("nats"), closed: make(chan struct{})}
	if opts.Conn != nil {
		p.nc = opts.Conn
	} else {
		if opts.URL == "" {
			return nil, errors.New("natsjs: Options needs a URL or a Conn")
		}
		p.ownConn = true
		p.nc, err = nats.Connect(opts.URL,
			nats.Name("eventlite relay"),
			nats.RetryOnFailedConnect(true),
			nats.MaxReconnects(-1),
			nats.ReconnectWait(250*time.Millisecond),
			nats.ReconnectBufSize(-1), // publishing while disconnected fails at once
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				if !p.closing.Load() {
					p.log.Warn("disconnected from NATS", "url", opts.URL, "error", err)
				}
			}),
			// Callbacks run one after the other on nats.go's goroutine;
			// this one is the last, so Close waits for it.
			nats.ClosedHandler(func(*nats.Conn) { close(p.closed) }),
			nats.ReconnectHandler(func(nc *nats.Conn) {
				p.log.Info("reconnected to NATS", "url", nc.ConnectedUrl())
			}),
		)
		if err != nil {
			return nil, fmt.Errorf("connect to NATS at %s: %w", opts.URL, err)
		}
	}
	p.replyLen = len(nats.InboxPrefix) + 13
	if pre := p.nc.Opts.InboxPrefix; pre != "" {
		p.replyLen = len(pre) + 1 + 13
	}
	p.js, err = jetstream.New(p.nc,
		jetstream.WithPublishAsyncMaxPending(opts.MaxInFlight),
		jetstream.WithPublishAsyncTimeout(opts.AckTimeout))
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("JetStream: %w", err)
	}
	if p.nc.IsConnected() {
		if err := p.checkStream(ctx); err != nil {
			p.Close()
			return nil, err
		}
		return p, nil
	}
	cause := dialCause(ctx, opts.URL, p.nc.Opts.Timeout)
	if opts.RequireConnect {
		p.log.Warn("NATS does not answer", "url", opts.URL, "error", cause)
		p.Close()
		return nil, classed(publish.Unreachable, fmt.Errorf("connect to NATS at %s: %s: check the URL and that the server runs (natsjs.Options.RequireConnect)", opts.URL, cause))
	}
	p.log.Warn("NATS does not answer yet; retrying in the background (publishes fail Unreachable until it does)", "url", opts.URL, "error", cause)
	return p, nil
}

// checkStream finds the stream, or creates it when told to, once.
func (p *Publisher) checkStream(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.checked {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.AckTimeout)
	defer cancel()
	s, err := p.js.Stream(ctx, p.opts.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && p.opts.CreateStream:
		subjects, _ := p.subject.streamSubjects()
		s, err = p.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       p.opts.Stream,
			Subjects:   subjects,
			Storage:    jetstream.FileStorage,
			Duplicates: DuplicateWindow,
		})
		if err != nil {
			return classed(publish.Fatal, fmt.Errorf("create JetStream stream %s for subjects %v: %w", p.opts.Stream, subjects, err))
		}
		p.log.Info("created JetStream stream", "stream", p.opts.Stream, "subjects", subjects, "duplicate_window", DuplicateWindow)
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return classed(publish.Fatal, fmt.Errorf("%w: %s does not exist: pass --create-stream to create it (or create it with subjects that cover %s)", ErrNoStream, p.opts.Stream, p.subject.text))
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return classed(publish.Fatal, fmt.Errorf("NATS at %s: %w: start nats-server with JetStream (-js)", p.nc.ConnectedUrl(), err))
	case err != nil:
		return classed(publish.Unreachable, fmt.Errorf("look up JetStream stream %s: %w", p.opts.Stream, err))
	}
	cfg := s.CachedInfo().Config
	p.log.Debug("JetStream stream", "stream", cfg.Name, "subjects", cfg.Subjects, "duplicate_window", cfg.Duplicates, "storage", cfg.Storage.String())
	p.checked = true
	return nil
}

// Publish sends the events pipelined and then awaits their acks. Before
// sending it encodes every event: one that cannot be encoded, that is
// larger than the server's max_payload, or whose subject makes a publish
// line longer than MaxControlLine, fails Permanent, and its stream's
// later events in the call are not sent. Each message's Headers (the
// per-hop trace context) are NATS headers beside the event's ce-
// headers, counted toward max_payload.
func (p *Publisher) Publish(ctx context.Context, msgs []publish.Message) []publish.Result {
	res := make([]publish.Result, len(msgs))
	fail := func(from int, err error) []publish.Result {
		for i := from; i < len(res); i++ {
			if res[i].Err == nil {
				res[i].Err = err
			}
		}
		return res
	}
	if !p.nc.IsConnected() {
		return fail(0, classed(publish.Unreachable, fmt.Errorf("NATS at %s: not connected (%s)", p.opts.URL, p.nc.Status())))
	}
	if err := p.checkStream(ctx); err != nil {
		return fail(0, err)
	}
	maxPayload := p.nc.MaxPayload()
	var failed map[streamKey]bool
	futures := make([]jetstream.PubAckFuture, len(msgs))
	stall := jetstream.WithStallWait(p.opts.AckTimeout)
	expect := jetstream.WithExpectStream(p.opts.Stream)
send:
	for i := range msgs {
		e := &msgs[i].Event
		k := keyOf(e)
		if failed[k] {
			res[i].Err = publish.ErrNotAttempted
			continue
		}
		msg, err := p.message(e, msgs[i].Headers, maxPayload)
		if err == nil {
			futures[i], err = p.js.PublishMsgAsync(msg, jetstream.WithMsgID(MessageID(e)), expect, stall)
			err = p.classify(err)
		}
		if err != nil {
			res[i].Err = err
			if publish.ClassOf(err) == publish.Unreachable {
				// The connection broke: send nothing more, and hear what
				// becomes of what was sent.
				fail(i+1, publish.ErrNotAttempted)
				break send
			}
			if failed == nil {
				failed = make(map[streamKey]bool)
			}
			failed[k] = true
		}
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			res[i] = publish.Result{Sequence: ack.Sequence, Duplicate: ack.Duplicate}
		case err := <-f.Err():
			res[i].Err = p.classify(err)
		case <-ctx.Done():
			for j := i; j < len(futures); j++ {
				if futures[j] != nil {
					res[j].Err = ctx.Err()
				}
			}
			return res
		}
	}
	return res
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

// MessageID is the broker message id of an event: "<tenant>:<event id>".
// Event ids are unique per tenant; the id must be unique across tenants.
func MessageID(e *envelope.Event) string { return e.Tenant + ":" + e.ID }

// message encodes an event as a NATS message in CloudEvents binary mode
// and checks its size against the server's limit, counting the headers
// that the publish adds. hop holds the per-hop trace headers (lowercase
// keys, as set: NATS headers are case-sensitive); none replaces a ce-
// header.
func (p *Publisher) message(e *envelope.Event, hop map[string]string, maxPayload int64) (*nats.Msg, error) {
	h, err := binaryHeaders(e)
	if err != nil {
		return nil, classed(publish.Permanent, fmt.Errorf("event %s cannot be encoded for NATS: %w", e.ID, err))
	}
	for k, v := range hop {
		if _, taken := h[k]; !taken {
			h[k] = []string{v}
		}
	}
	msg := &nats.Msg{Subject: p.subject.render(e), Header: h, Data: e.Data}
	hdr := int64(headerSize(h)) +
		int64(len(jetstream.MsgIDHeader)+len(MessageID(e))+4) +
		int64(len(jetstream.ExpectedStreamHeader)+len(p.opts.Stream)+4)
	size := int64(len(e.Data)) + hdr
	if maxPayload > 0 && size > maxPayload {
		return nil, classed(publish.Permanent, &TooLargeError{EventID: e.ID, Size: size, Limit: maxPayload})
	}
	// The server reads "HPUB <subject> <reply> <header size> <total size>"
	// and closes the connection when that is longer than its
	// max_control_line: check it here, or the event would pass for a
	// broker that went down, for ever.
	line := len(msg.Subject) + 1 + p.replyLen + 1 + decimalLen(hdr) + 1 + decimalLen(size)
	if line > p.opts.MaxControlLine {
		return nil, classed(publish.Permanent, &SubjectTooLongError{EventID: e.ID, Subject: msg.Subject, Line: line, Limit: p.opts.MaxControlLine})
	}
	return msg, nil
}

// decimalLen is the number of decimal digits of n >= 0.
func decimalLen(n int64) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// SubjectTooLongError: an event's subject makes its publish line longer
// than the server reads (its max_control_line).
type SubjectTooLongError struct {
	EventID string
	Subject string // the rendered subject
	Line    int    // the publish line's length, bytes
	Limit   int    // Options.MaxControlLine
}

func (e *SubjectTooLongError) Error() string {
	return fmt.Sprintf("event %s: its NATS subject is %d bytes (%q), which makes a publish line of %d bytes, over the server's max_control_line of %d: use a subject template with fewer or shorter placeholders (every escaped byte takes three), or raise max_control_line on the server and natsjs.Options.MaxControlLine to match; then eventlite dlq retry %s",
		e.EventID, len(e.Subject), truncate(e.Subject), e.Line, e.Limit, e.EventID)
}

// TooLargeError: an event is larger, as a NATS message, than the server
// accepts. errors.Is(err, store.ErrTooLarge) holds for it.
type TooLargeError struct {
	EventID string
	Size    int64 // the message's payload and headers, bytes
	Limit   int64 // the server's max_payload, bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("event %s is %d bytes as a NATS message (data and headers), over the server's max_payload of %d bytes: raise max_payload in the nats-server configuration (it may go up to 64 MB) above %d, or store smaller events; then eventlite dlq retry %s",
		e.EventID, e.Size, e.Limit, e.Size, e.EventID)
}

// Unwrap lets errors.Is(err, store.ErrTooLarge) match, as it does for an
// event the store refused for its size.
func (e *TooLargeError) Unwrap() error { return store.ErrTooLarge }

// classify gives a NATS or JetStream error its class.
func (p *Publisher) classify(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr):
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamMessageExceedsMaximum, 10097: // message or its headers over the stream's limits
			return classed(publish.Permanent, fmt.Errorf("JetStream stream %s refused the message: %w: raise the stream's max_msg_size, then eventlite dlq retry", p.opts.Stream, err))
		case jetstream.JSErrCodeStreamNotFound, 10060: // 10060: the subject belongs to another stream
			return classed(publish.Fatal, fmt.Errorf("JetStream stream %s: %w: check the stream and the subject template %s", p.opts.Stream, err, p.subject.text))
		case 10023, 10008: // insufficient resources, cluster not available: the broker, not the event
			return classed(publish.Unreachable, err)
		}
		return classed(publish.Transient, err)
	case errors.Is(err, nats.ErrMaxPayload):
		return classed(publish.Permanent, fmt.Errorf("%w: raise max_payload in the nats-server configuration, then eventlite dlq retry", err))
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return classed(publish.Unreachable, fmt.Errorf("%w (no JetStream stream answered: is JetStream up, and does stream %s take the subject?)", err, p.opts.Stream))
	case errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrReconnectBufExceeded),
		errors.Is(err, nats.ErrConnectionDraining), errors.Is(err, jetstream.ErrTooManyStalledMsgs),
		errors.Is(err, nats.ErrInvalidConnection):
		return classed(publish.Unreachable, err)
	}
	return classed(publish.Transient, err)
}

// Ping checks that the server answers JetStream requests.
func (p *Publisher) Ping(ctx context.Context) error {
	if !p.nc.IsConnected() {
		return classed(publish.Unreachable, fmt.Errorf("NATS at %s: not connected (%s)", p.opts.URL, p.nc.Status()))
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.AckTimeout)
	defer cancel()
	if _, err := p.js.AccountInfo(ctx); err != nil {
		return classed(publish.Unreachable, fmt.Errorf("NATS JetStream at %s: %w", p.opts.URL, err))
	}
	return nil
}

// Close closes the connection NewPublisher opened (not one passed in Conn)
// and waits for its callbacks, which log, to finish.
func (p *Publisher) Close() error {
	if !p.ownConn || p.nc == nil || p.closing.Swap(true) {
		return nil
	}
	p.nc.Close()
	select {
	case <-p.closed:
	case <-time.After(5 * time.Second):
	}
	return nil
}

// Conn returns the NATS connection.
func (p *Publisher) Conn() *nats.Conn { return p.nc }

// binaryHeaders encodes an event's attributes as NATS headers in
// CloudEvents binary mode, as sdk-go's NATS JetStream binding writes them:
// "ce-" and the attribute name, each value in its canonical string form
// (RFC 3339 nanosecond time, decimal integers). The data goes as the
// payload. It writes the headers directly: going through sdk-go's binding
// (ToCloudEvent, then binding.Write into a header writer) cost 9.6 us an
// event here, a fifth of the relay's whole budget per event, for the same
// bytes; TestBinaryHeadersMatchSDK and FuzzBinaryHeadersMatchSDK compare
// the two on every kind of event.
func binaryHeaders(e *envelope.Event) (nats.Header, error) {
	w := headerWriter{h: make(nats.Header, 13+len(e.Extensions))}
	w.vals = make([]string, 0, 13+len(e.Extensions))
	w.set("ce-specversion", envelope.SpecVersion)
	w.set("ce-id", e.ID)
	w.set("ce-source", e.Source)
	w.set("ce-type", e.Type)
	w.set("ce-subject", e.Stream)
	if e.HasTime() {
		w.set("ce-time", e.Time.UTC().Format(time.RFC3339Nano))
	}
	w.set("ce-datacontenttype", e.DataContentType)
	w.set("ce-dataschema", e.DataSchema)
	w.set("ce-"+envelope.ExtTenant, e.Tenant)
	if e.StreamVersion > 0 {
		w.set("ce-"+envelope.ExtStreamVersion, strconv.FormatInt(int64(int32(e.StreamVersion)), 10))
	}
	if e.Position > 0 {
		w.set("ce-"+envelope.ExtPosition, strconv.FormatInt(e.Position, 10))
	}
	w.set("ce-"+envelope.ExtCorrelationID, e.CorrelationID)
	w.set("ce-"+envelope.ExtCausationID, e.CausationID)
	if len(e.Tags) > 0 {
		w.set("ce-"+envelope.ExtTags, envelope.EncodeTags(e.Tags))
	}
	for k, v := range e.Extensions {
		f, err := types.Format(v)
		if err != nil {
			return nil, fmt.Errorf("extension %s: %w", k, err)
		}
		w.add("ce-"+k, f) // sdk-go writes an extension even when empty
	}
	if w.err != nil {
		return nil, w.err
	}
	return w.h, nil
}

// headerWriter fills NATS headers, one value each, from one backing
// array.
type headerWriter struct {
	h    nats.Header
	vals []string
	err  error
}

// set adds a context attribute; sdk-go leaves an empty one out.
func (w *headerWriter) set(key, v string) {
	if v != "" {
		w.add(key, v)
	}
}

// add adds a header unless NATS would change its value in transit.
func (w *headerWriter) add(key, v string) {
	if w.err != nil {
		return
	}
	if v != "" && (isHeaderSpace(v[0]) || isHeaderSpace(v[len(v)-1])) || strings.ContainsAny(v, "\r\n") {
		w.err = fmt.Errorf("attribute %s %q holds white space at an end or a line break, which NATS headers cannot carry", strings.TrimPrefix(key, "ce-"), truncate(v))
		return
	}
	w.vals = append(w.vals, v)
	w.h[key] = w.vals[len(w.vals)-1 : len(w.vals) : len(w.vals)]
}

// isHeaderSpace: the white space that NATS trims from header values.
func isHeaderSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// headerSize is the size of headers on the wire, as nats.go counts it
// against max_payload.
func headerSize(h nats.Header) int {
	n := len("NATS/1.0\r\n") + 2
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// dialCause says why the server at addr (the first of a comma-separated
// list) did not answer: nats.go's retrying connection keeps the cause to
// itself, so it dials once more, bounded by timeout.
func dialCause(ctx context.Context, addr string, timeout time.Duration) string {
	first, _, _ := strings.Cut(addr, ",")
	u, err := url.Parse(first)
	if err != nil || u.Host == "" {
		return "no answer"
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), strconv.Itoa(nats.DefaultPort))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return err.Error()
	}
	_ = c.Close()
	return "no answer to the NATS handshake"
}
