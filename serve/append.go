package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// Media types of the CloudEvents HTTP binding.
const (
	ctStructured = "application/cloudevents+json"
	ctBatch      = "application/cloudevents-batch+json"
	ctJSON       = "application/json"
	ctNDJSON     = "application/x-ndjson"
	ctSSE        = "text/event-stream"
	ctProblem    = "application/problem+json"
)

// appender is what both *store.Store and *store.Tx append with.
type appender interface {
	Append(ctx context.Context, tenant, stream string, expected store.Expected, events ...envelope.Event) (store.AppendResult, error)
}

var (
	_ appender = (*store.Store)(nil)
	_ appender = (*store.Tx)(nil)
)

// appendOutput is the body of a 201: the CLI's append --json object.
type appendOutput struct {
	Tenant        string `json:"tenant"`
	Stream        string `json:"stream"`
	Version       int64  `json:"version"`
	FirstPosition *int64 `json:"first_position,omitempty,string"`
	LastPosition  *int64 `json:"last_position,omitempty,string"`
}

// answer is a successful append's response, as the operation ledger
// records it for an Idempotency-Key.
type answer struct {
	Status   int               `json:"status"`
	Header   map[string]string `json:"header,omitempty"`
	Body     json.RawMessage   `json:"body"`
	replayed bool              // the store found the events already stored
}

func (a *answer) write(w http.ResponseWriter, replayed bool) {
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	if replayed || a.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", ctJSON)
	w.WriteHeader(a.Status)
	body := a.Body
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(body, '\n') // the ledger keeps it compacted
	}
	_, _ = w.Write(body)
}

// precondition is a POST's If-Match or If-None-Match.
type precondition struct {
	exp store.Expected
}

// parseTag reads one entity-tag (RFC 9110 8.8.3): `"x"` or `W/"x"`,
// where x holds no '"' and no white space or control character.
func parseTag(s string) (tag string, weak, ok bool) {
	if rest, found := strings.CutPrefix(s, "W/"); found {
		s, weak = rest, true
	}
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false, false
	}
	inner := s[1 : len(s)-1]
	for i := 0; i < len(inner); i++ {
		if c := inner[i]; c == '"' || c <= ' ' || c == 0x7f {
			return "", false, false
		}
	}
	return inner, weak, true
}

func invalidPrecondition(field, format string, args ...any) *Problem {
	p := problemf("invalid-precondition", format, args...)
	p.Field = field
	return p
}

// ifMatchRule is what an If-Match may be; any other value is one answer,
// 400 invalid-precondition.
var ifMatchRule = fmt.Sprintf(`must be * or one ETag this server sent: a version from 1 to %d in double quotes, such as "3"`, envelope.MaxStreamVersion)

// parsePostPreconditions reads an append's If-Match or If-None-Match:
// If-None-Match: * (no stream), If-Match: * (exists), If-Match: "N".
// Every other If-Match (malformed, a list, weak, not a version, "0",
// past the last version) is 400 invalid-precondition: this server sends
// only strong ETags of versions, so such a value is a client's mistake
// that no retry mends, never a conflict.
func parsePostPreconditions(hd http.Header) (precondition, *Problem) {
	im, inm := hd.Values("If-Match"), hd.Values("If-None-Match")
	switch {
	case len(im) > 0 && len(inm) > 0:
		return precondition{}, invalidPrecondition("If-Match", "send If-Match or If-None-Match, not both")
	case len(im) > 1 || len(inm) > 1:
		return precondition{}, invalidPrecondition("If-Match", "send one precondition header with one value, not a list")
	case len(inm) == 1:
		if strings.TrimSpace(inm[0]) != "*" {
			return precondition{}, invalidPrecondition("If-None-Match", "on POST only If-None-Match: * (the stream must not exist) is supported, got %q", inm[0])
		}
		return precondition{exp: store.NoStream}, nil
	case len(im) == 1:
		v := strings.TrimSpace(im[0])
		if v == "*" {
			return precondition{exp: store.StreamExists}, nil
		}
		bad := func(why string) (precondition, *Problem) {
			p := invalidPrecondition("If-Match", "If-Match %q %s: it %s (a stream that does not exist has no ETag: send If-None-Match: * for a new stream)", v, why, ifMatchRule)
			p.Reason = ifMatchRule
			return precondition{}, p
		}
		if strings.Contains(v, ",") {
			return bad("is a list")
		}
		tag, weak, ok := parseTag(v)
		switch {
		case !ok:
			return bad("is not an entity tag")
		case weak:
			return bad("is a weak tag")
		}
		n, err := strconv.ParseInt(tag, 10, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange), err == nil && n > envelope.MaxStreamVersion:
			return bad("is past the last version a stream can have")
		case err != nil || strconv.FormatInt(n, 10) != tag:
			return bad("is not a version")
		case n < 1:
			return bad("names no version")
		}
		return precondition{exp: store.Exact(n)}, nil
	}
	return precondition{exp: store.Any}, nil
}

// holds says whether a stream at version current satisfies the
// precondition (for an empty batch, which the store is not asked about).
func (pc precondition) holds(current int64) bool {
	switch {
	case pc.exp == store.NoStream:
		return current == 0
	case pc.exp == store.StreamExists:
		return current > 0
	}
	if v, ok := pc.exp.Version(); ok {
		return v == current
	}
	return true
}

// readBody reads the request body within MaxBodyBytes.
func readBody(r *http.Request) ([]byte, *Problem) {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, problemf("invalid-event", "reading the body: %v", err)
	}
	if len(b) > MaxBodyBytes {
		p := problemf("too-large", "the body is over %d bytes: send fewer events per request", MaxBodyBytes)
		p.Field, p.Limit = "body", ptr(int64(MaxBodyBytes))
		return nil, p
	}
	return b, nil
}

// ceAttributes collects the ce-* headers, percent-decoded, by attribute
// name.
func ceAttributes(hd http.Header) (map[string]string, *Problem) {
	attrs := make(map[string]string)
	for k, vs := range hd {
		name := strings.ToLower(k)
		if !strings.HasPrefix(name, "ce-") {
			continue
		}
		name = name[3:]
		if len(vs) != 1 {
			p := problemf("invalid-event", "header %s given %d times: send each attribute once", k, len(vs))
			p.Field = name
			return nil, p
		}
		v, err := url.PathUnescape(vs[0])
		if err != nil {
			p := problemf("invalid-event", "header %s: %v: percent-encode as RFC 3986 says", k, err)
			p.Field = name
			return nil, p
		}
		attrs[name] = v
	}
	return attrs, nil
}

// decoded is a POST body's events.
type decoded struct {
	events []envelope.Event
	// fingerprint hashes the events as sent, before the server's defaults
	// (a candidate's id) are filled.
	fingerprint []byte
}

// decodeEvents reads an append's events in binary, structured or batch
// mode, or as an event candidate.
func (h *Handler) decodeEvents(r *http.Request) (decoded, *Problem) {
	body, p := readBody(r)
	if p != nil {
		return decoded{}, p
	}
	ct := r.Header.Get("Content-Type")
	media := ""
	if ct != "" {
		m, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return decoded{}, problemf("unsupported-media-type", "Content-Type %q is malformed: send %s, %s, or CloudEvents binary mode (ce-* headers)", ct, ctStructured, ctBatch)
		}
		media = m
	}
	var (
		evs       []envelope.Event
		err       error
		generated = -1 // the candidate's generated id is left out of the fingerprint
	)
	if r.Header.Get("ce-specversion") != "" {
		attrs, p := ceAttributes(r.Header)
		if p != nil {
			return decoded{}, p
		}
		if ct != "" {
			attrs["datacontenttype"] = ct
		}
		var data []byte
		if len(body) > 0 {
			data = body
		}
		var e envelope.Event
		e, err = envelope.DecodeBinary(attrs, data, h.opts.MaxDataBytes)
		evs = []envelope.Event{e}
	} else {
		switch {
		case media == ctStructured:
			var e envelope.Event
			e, err = envelope.DecodeJSON(body, h.opts.MaxDataBytes)
			evs = []envelope.Event{e}
		case media == ctBatch:
			evs, err = envelope.DecodeBatchJSON(body, h.opts.MaxDataBytes)
		case media == ctJSON && r.Header.Get("ce-type") != "":
			attrs, p := ceAttributes(r.Header)
			if p != nil {
				return decoded{}, p
			}
			attrs["specversion"] = envelope.SpecVersion
			attrs["datacontenttype"] = ct
			if _, ok := attrs["id"]; !ok {
				attrs["id"] = ulid.Make().String()
				generated = 0
			}
			if _, ok := attrs["source"]; !ok {
				attrs["source"] = r.URL.EscapedPath()
			}
			var data []byte
			if len(body) > 0 {
				data = body
			}
			var e envelope.Event
			e, err = envelope.DecodeBinary(attrs, data, h.opts.MaxDataBytes)
			evs = []envelope.Event{e}
		default:
			p := problemf("unsupported-media-type", "Content-Type %q is not an event: send %s (one event), %s (a batch), CloudEvents binary mode (ce-specversion and the other ce-* headers), or %s with a ce-type header (an event candidate)", ct, ctStructured, ctBatch, ctJSON)
			p.Field = "Content-Type"
			return decoded{}, p
		}
	}
	if err != nil {
		return decoded{}, problemFor(err, "", "", nil)
	}
	if len(r.Header.Values("Idempotency-Key")) == 0 {
		return decoded{events: evs}, nil // only a keyed request needs its fingerprint
	}
	sum := sha256.New()
	for i := range evs {
		e := evs[i]
		if i == generated {
			e.ID = ""
		}
		sum.Write(e.AppendJSON(nil))
		sum.Write([]byte{'\n'})
	}
	return decoded{events: evs, fingerprint: sum.Sum(nil)}, nil
}

// group is the events of one stream in an append.
type group struct {
	stream  string
	exp     store.Expected
	pc      precondition
	events  []envelope.Event
	indexes []int // each event's place in the request
}

// checkEvents fills each event's subject and tenant (refusing others) and
// refuses an id twice in the request.
func checkEvents(tenant string, evs []envelope.Event, stream string) *Problem {
	seen := make(map[string]int, len(evs))
	for i := range evs {
		e := &evs[i]
		if stream != "" {
			if e.Stream != "" && e.Stream != stream {
				p := problemf("subject-mismatch", "event %d has subject %q but is posted to stream %q: post it to its stream, or leave the subject out", i, e.Stream, stream)
				p.Tenant, p.Stream, p.Field, p.Index = tenant, stream, "subject", ptr(i)
				return p
			}
			e.Stream = stream
		} else if e.Stream == "" {
			p := problemf("invalid-event", "event %d has no subject: posted to the tenant's log, each event names its stream in subject", i)
			p.Tenant, p.Field, p.Reason, p.Index = tenant, "subject", "missing", ptr(i)
			return p
		} else if err := envelope.ValidateStream(e.Stream); err != nil {
			p := problemf("invalid-stream-id", "event %d: %v", i, err)
			p.Tenant, p.Stream, p.Field, p.Index = tenant, e.Stream, "subject", ptr(i)
			return p
		}
		if e.Tenant != "" && e.Tenant != tenant {
			p := problemf("invalid-event", "event %d has tenant %q but is posted to tenant %q: leave the tenant attribute out, or post to its tenant", i, e.Tenant, tenant)
			p.Tenant, p.Field, p.Reason, p.Index = tenant, "tenant", "differs from the path's tenant", ptr(i)
			return p
		}
		e.Tenant = tenant
		if j, ok := seen[e.ID]; ok {
			p := problemf("duplicate-event-id", "events %d and %d have the same id %q: give each event its own id", j, i, e.ID)
			p.Tenant, p.Stream, p.Field, p.Reason, p.Index = tenant, e.Stream, "id", "twice in this request", ptr(i)
			return p
		}
		seen[e.ID] = i
	}
	return nil
}

// appendStream answers POST .../streams/{stream}/events.
func (h *Handler) appendStream(w http.ResponseWriter, r *http.Request, tenant, stream string) {
	pc, p := parsePostPreconditions(r.Header)
	if p != nil {
		p.Tenant, p.Stream = tenant, stream
		writeProblem(w, p)
		return
	}
	d, p := h.decodeEvents(r)
	if p == nil {
		p = checkEvents(tenant, d.events, stream)
	}
	if p != nil {
		p.Tenant, p.Stream = tenant, stream
		writeProblem(w, p)
		return
	}
	idx := make([]int, len(d.events))
	for i := range idx {
		idx[i] = i
	}
	cond, p := parseCondition(r.Header)
	if p != nil {
		p.Tenant, p.Stream = tenant, stream
		writeProblem(w, p)
		return
	}
	g := group{stream: stream, exp: pc.exp, pc: pc, events: d.events, indexes: idx}
	if cond != nil {
		g.exp = g.exp.If(*cond)
	}
	h.commit(w, r, tenant, []group{g}, false, d.fingerprint)
}

// appendMany answers POST .../events: each event's subject is its stream,
// all in one transaction, without preconditions.
func (h *Handler) appendMany(w http.ResponseWriter, r *http.Request, tenant string) {
	if len(r.Header.Values("If-Match")) > 0 || len(r.Header.Values("If-None-Match")) > 0 {
		p := invalidPrecondition("If-Match", "an append to the tenant's log takes no precondition: post to .../streams/{stream}/events for one")
		p.Tenant = tenant
		writeProblem(w, p)
		return
	}
	cond, p := parseCondition(r.Header)
	if p != nil {
		p.Tenant = tenant
		writeProblem(w, p)
		return
	}
	d, p := h.decodeEvents(r)
	if p == nil {
		p = checkEvents(tenant, d.events, "")
	}
	if p != nil {
		p.Tenant = tenant
		writeProblem(w, p)
		return
	}
	var groups []group
	at := make(map[string]int)
	for i, e := range d.events {
		j, ok := at[e.Stream]
		if !ok {
			j = len(groups)
			at[e.Stream] = j
			groups = append(groups, group{stream: e.Stream, exp: store.Any})
		}
		groups[j].events = append(groups[j].events, e)
		groups[j].indexes = append(groups[j].indexes, i)
	}
	if cond != nil && len(groups) > 0 {
		// Checked once, before the request's first event is inserted:
		// the request's own events do not fail it.
		groups[0].exp = groups[0].exp.If(*cond)
	}
	h.commit(w, r, tenant, groups, true, d.fingerprint)
}

// commit appends the groups (one transaction when there are several, or
// an Idempotency-Key) and answers.
func (h *Handler) commit(w http.ResponseWriter, r *http.Request, tenant string, groups []group, many bool, fingerprint []byte) {
	ctx := r.Context()
	key, p := idempotencyKey(r.Header)
	if p != nil {
		p.Tenant = tenant
		writeProblem(w, p)
		return
	}
	var (
		ans *answer
		err error
	)
	fail := func(err error) {
		var stream string
		if len(groups) == 1 {
			stream = groups[0].stream
		}
		p := problemFor(err, tenant, stream, func(id string) int {
			for _, g := range groups {
				for i, e := range g.events {
					if e.ID == id {
						return g.indexes[i]
					}
				}
			}
			return -1
		})
		writeProblem(w, p)
	}
	if key == "" {
		if !many {
			ans, err = h.appendGroups(ctx, h.s, tenant, groups, many)
		} else {
			err = h.s.Update(ctx, func(tx *store.Tx) error {
				var err error
				ans, err = h.appendGroups(ctx, tx, tenant, groups, many)
				return err
			})
		}
		if err != nil {
			fail(err)
			return
		}
		ans.write(w, false)
		return
	}
	ans, replayed, err := h.once(w, r, tenant, key, operationType, fingerprint, subjectsOf(groups), func(tx *store.Tx) (*answer, error) {
		return h.appendGroups(ctx, tx, tenant, groups, many)
	})
	if err != nil {
		fail(err)
		return
	}
	if ans != nil {
		ans.write(w, replayed)
	}
}

// once runs do for a request with an Idempotency-Key, in one transaction
// with the operation ledger: the first request with the key runs do and
// records its answer; a retry with the same key and request gets that
// answer back (replayed), one with another request a mismatch problem.
// While a request with the key is being answered, another is refused
// with Retry-After. A nil answer and nil error mean the problem is
// written already. A request whose events name subjects (erasurekey)
// has its fingerprint keyed by their data keys (store's KeyInput), so
// forget destroys what could confirm a guess of the request's data; a
// retry after the forget cannot be compared and is refused as an append
// under the forgotten subject (invalid-event on erasurekey).
func (h *Handler) once(w http.ResponseWriter, r *http.Request, tenant, key, opType string, input []byte, subjects []string,
	do func(tx *store.Tx) (*answer, error)) (ans *answer, replayed bool, err error) {
	ctx := r.Context()
	fp := requestFingerprint(r, input)
	if !h.enter(tenant, key) {
		p := problemf("idempotency-key-in-flight", "a request with Idempotency-Key %q is still being answered: retry after a second", key)
		p.Tenant = tenant
		writeProblem(w, p.with("Retry-After", "1"))
		return nil, false, nil
	}
	defer h.leave(tenant, key)
	opID := operationID(key)
	err = h.s.Update(ctx, func(tx *store.Tx) error {
		stored, ok, err := store.Bookkeeping(inside.Key{}, tx).Operation(ctx, tenant, opID)
		if err != nil {
			return err
		}
		if ok {
			given := fp
			// A fingerprint recorded unkeyed
			// is compared as it was recorded.
			if len(subjects) > 0 && strings.HasPrefix(stored.InputHash, "k1:") {
				if given, _, err = store.Bookkeeping(inside.Key{}, tx).KeyInput(ctx, store.Operation{Tenant: tenant, ID: opID, InputHash: fp}, subjects); err != nil {
					return err
				}
			}
			if stored.InputHash != given || stored.Type != opType {
				p := problemf("idempotency-key-mismatch", "Idempotency-Key %q was used for another request: use a new key for a new request", key)
				p.Tenant, p.Field = tenant, "Idempotency-Key"
				return p
			}
			ans, replayed = new(answer), true
			return json.Unmarshal(stored.Result, ans)
		}
		if ans, err = do(tx); err != nil {
			return err
		}
		rec, err := json.Marshal(ans)
		if err != nil {
			return err
		}
		keyed := fp
		if len(subjects) > 0 {
			// do appended the events: each subject has its key now.
			if keyed, _, err = store.Bookkeeping(inside.Key{}, tx).KeyInput(ctx, store.Operation{Tenant: tenant, ID: opID, InputHash: fp}, subjects); err != nil {
				return err
			}
		}
		_, err = store.Bookkeeping(inside.Key{}, tx).RecordOperation(ctx, store.Operation{Tenant: tenant, ID: opID, Type: opType, InputHash: keyed, Result: rec})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return ans, replayed, nil
}

// appendGroups appends each group with a and builds the answer.
func (h *Handler) appendGroups(ctx context.Context, a appender, tenant string, groups []group, many bool) (*answer, error) {
	var outs []appendOutput
	replayed := len(groups) > 0
	var first *store.AppendResult
	for _, g := range groups {
		if len(g.events) == 0 {
			// An empty batch appends nothing: its answer is the version.
			v, err := h.s.StreamVersion(ctx, tenant, g.stream)
			if err != nil {
				return nil, err
			}
			if !g.pc.holds(v) {
				return nil, &store.ConflictError{Tenant: tenant, Stream: g.stream, Expected: g.exp, Actual: v}
			}
			body, _ := json.Marshal(appendOutput{Tenant: tenant, Stream: g.stream, Version: v})
			return &answer{Status: http.StatusOK, Header: map[string]string{"ETag": etag(v)}, Body: append(body, '\n')}, nil
		}
		res, err := a.Append(ctx, tenant, g.stream, g.exp, g.events...)
		if err != nil {
			return nil, err
		}
		replayed = replayed && res.Replayed
		if first == nil {
			first = &res
		}
		outs = append(outs, appendOutput{Tenant: tenant, Stream: g.stream, Version: res.Version,
			FirstPosition: ptr(res.FirstPosition()), LastPosition: ptr(res.LastPosition())})
	}
	var body []byte
	if many {
		body, _ = json.Marshal(struct {
			Results []appendOutput `json:"results"`
		}{outs})
	} else {
		body, _ = json.Marshal(outs[0])
	}
	hd := map[string]string{}
	if first != nil {
		hd["Location"] = eventPath(tenant, first.Stream, first.Events[0].StreamVersion)
		if !many {
			hd["ETag"] = etag(first.Version)
		}
	}
	return &answer{Status: http.StatusCreated, Header: hd, Body: append(body, '\n'), replayed: replayed}, nil
}

// subjectsOf lists, sorted and once each, the subjects (erasurekey) the
// groups' events name: the keys of the request's fingerprint.
func subjectsOf(groups []group) []string {
	var subjects []string
	for _, g := range groups {
		for _, e := range g.events {
			if v, ok := e.Extensions[store.ExtErasureKey].(string); ok && v != "" {
				subjects = append(subjects, v)
			}
		}
	}
	sort.Strings(subjects)
	return slices.Compact(subjects)
}

// operationType is the ledger's type of an HTTP append.
const operationType = "http.append"

// operationID is the ledger id of an Idempotency-Key: "http:" + key, or,
// for a key too long for the ledger with the prefix, "http.sha256:" and
// the key's hash. The two namespaces are distinct: every literal key's id
// starts with "http:", no hashed one does, so the literal key
// "sha256:<hex>" never meets a long key's hash. (Before schema 17 hashed
// keys were "http:sha256:<hex>"; migration 0017, on PostgreSQL 0002,
// moved them.)
func operationID(key string) string { return operationIDIn("", key) }

// operationIDIn is operationID in the namespace ns (prefixed to it).
func operationIDIn(ns, key string) string {
	if len(ns)+len(literalKeyPrefix)+len(key) <= store.MaxOperationIDBytes {
		return ns + literalKeyPrefix + key
	}
	sum := sha256.Sum256([]byte(key))
	return ns + hashedKeyPrefix + hex.EncodeToString(sum[:])
}

// The namespaces of Idempotency-Keys in the operation ledger.
const (
	literalKeyPrefix = "http:"
	hashedKeyPrefix  = "http.sha256:"
)

// idempotencyKey reads Idempotency-Key: "k" or k, 1-255 visible ASCII.
func idempotencyKey(hd http.Header) (string, *Problem) {
	vs := hd.Values("Idempotency-Key")
	if len(vs) == 0 {
		return "", nil
	}
	bad := func(reason string) (string, *Problem) {
		p := problemf("invalid-idempotency-key", "Idempotency-Key: %s", reason)
		p.Field, p.Reason = "Idempotency-Key", reason
		return "", p
	}
	if len(vs) > 1 {
		return bad("sent more than once")
	}
	k := strings.TrimSpace(vs[0])
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	if k == "" || len(k) > 255 {
		return bad("must be 1-255 visible ASCII characters")
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] >= 0x7f || k[i] == '"' {
			return bad("must be 1-255 visible ASCII characters")
		}
	}
	return k, nil
}

// requestFingerprint hashes the method, the decoded path, the If-* headers
// and the events as sent.
func requestFingerprint(r *http.Request, events []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%q\n", r.Method, r.URL.Path)
	var names []string
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "if-") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(h, "%s: %q\n", k, r.Header.Values(k))
	}
	h.Write(events)
	return hex.EncodeToString(h.Sum(nil))
}

func (h *Handler) enter(tenant, key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := tenant + "\x00" + key
	if h.inFlight[k] {
		return false
	}
	h.inFlight[k] = true
	return true
}

func (h *Handler) leave(tenant, key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.inFlight, tenant+"\x00"+key)
}

// escapeSegment percent-encodes one path segment; "." and ".." are sent
// as %2E and %2E%2E so that no client or proxy resolves them.
func escapeSegment(s string) string {
	switch s {
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	return url.PathEscape(s)
}

func streamPath(tenant, stream string) string {
	return "/v1/tenants/" + escapeSegment(tenant) + "/streams/" + escapeSegment(stream)
}

func eventPath(tenant, stream string, version int64) string {
	return streamPath(tenant, stream) + "/events/" + strconv.FormatInt(version, 10)
}
