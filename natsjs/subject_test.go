package natsjs_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// unescapeToken inverts SanitizeToken; ok is false for a token that
// SanitizeToken cannot have written. A mapping with an inverse is
// injective.
func unescapeToken(tok string) (v string, ok bool) {
	if tok == natsjs.EmptyToken {
		return "", true
	}
	var b []byte
	for i := 0; i < len(tok); i++ {
		if tok[i] != '_' {
			b = append(b, tok[i])
			continue
		}
		if i+3 > len(tok) || strings.ToUpper(tok[i+1:i+3]) != tok[i+1:i+3] {
			return "", false
		}
		n, err := strconv.ParseUint(tok[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b = append(b, byte(n))
		i += 2
	}
	return string(b), len(b) > 0
}

// validToken reports whether tok may stand as one token of a NATS subject
// that any client and filter reads the same way: no '.', wildcard, white
// space or control character, valid UTF-8.
func validToken(tok string) bool {
	if tok == "" || !utf8.ValidString(tok) {
		return false
	}
	for _, r := range tok {
		if r == '.' || r == '*' || r == '>' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// The values that met on one subject before: '.', '*', '>' and '_' all
// became '_', and an empty value became "_" too.
var collidingValues = []string{"a.b", "a_b", "a*b", "a>b", "a b", "a\tb", "a\x01b", "a_2Eb", "a_5Fb", "", "_", "__", "_2E"}

func TestSanitizeTokenIsInjective(t *testing.T) {
	seen := map[string]string{}
	check := func(v string) {
		t.Helper()
		tok := natsjs.SanitizeToken(v)
		if !validToken(tok) {
			t.Fatalf("%q becomes %q, which is not a valid subject token", v, tok)
		}
		if back, ok := unescapeToken(tok); !ok || back != v {
			t.Fatalf("%q becomes %q, which reads back as %q (ok %v)", v, tok, back, ok)
		}
		if other, dup := seen[tok]; dup && other != v {
			t.Fatalf("%q and %q both become %q", other, v, tok)
		}
		seen[tok] = v
	}
	for _, v := range collidingValues {
		check(v)
	}
	// Random values over an alphabet of what must be escaped and what
	// must not: multi-byte white space and C1 controls, invalid UTF-8,
	// text that looks like an escape.
	alphabet := []string{"a", "Z", "0", "F", "-", ":", "/", "é", "日", "\uFFFD", ".", "*", ">", "_", " ", "\t", "\n", "\x00", "\x7f",
		"\u0085", "\u00a0", "\u2028", "\u3000", "\xff", "\xc3", "\xe2\x80", "_2E", "_5F", "2E", "ab"}
	sd := seed(t)
	rnd := rand.New(rand.NewPCG(sd, sd))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		var b strings.Builder
		for range rnd.IntN(8) {
			b.WriteString(alphabet[rnd.IntN(len(alphabet))])
		}
		check(b.String())
	}
	// Bytes that need no escape stay as they are.
	if got := natsjs.SanitizeToken("Order-Placed:v2/é日"); got != "Order-Placed:v2/é日" {
		t.Errorf("plain value changed: %q", got)
	}
}

// Tenants, streams and types that used to share a subject each get their
// own on a real JetStream server, and a consumer's subject filter for one
// tenant sees only that tenant's events.
func TestTenantsNeverShareASubject(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	p := newNATS(t, srv.URL(), natsjs.Options{Subject: "eventlite.{tenant}.{stream}.{type}"})
	tenants := []string{"a.b", "a_b", "a-b"}
	values := []string{"a.b", "a_b", "a*b", "a>b", "a b", "_", ""}
	type key struct{ tenant, stream, typ string }
	var evs []envelope.Event
	for _, tn := range tenants {
		for _, st := range values {
			for _, ty := range values {
				if ty == "" {
					continue // an event has a type; the empty value is tried as a stream
				}
				evs = append(evs, envelope.Event{ID: strconv.Itoa(len(evs) + 1), Source: "/s", Type: ty, Tenant: tn, Stream: st, StreamVersion: 1})
			}
		}
	}
	for i, r := range p.Publish(context.Background(), publish.Messages(evs...)) {
		if r.Err != nil {
			t.Fatalf("event %d (%q %q %q): %v", i, evs[i].Tenant, evs[i].Stream, evs[i].Type, r.Err)
		}
	}
	msgs := srv.Messages(t, natsjs.DefaultStream)
	if len(msgs) != len(evs) {
		t.Fatalf("%d messages for %d events", len(msgs), len(evs))
	}
	bySubject := map[string]key{}
	for _, m := range msgs {
		h := m.Headers()
		k := key{h.Get("ce-tenant"), h.Get("ce-subject"), h.Get("ce-type")}
		if other, dup := bySubject[m.Subject()]; dup {
			t.Errorf("subject %q holds both %q and %q", m.Subject(), other, k)
		}
		bySubject[m.Subject()] = k
		// The subject reads back as the values it was made of.
		toks := strings.Split(m.Subject(), ".")
		if len(toks) != 4 || toks[0] != "eventlite" {
			t.Errorf("subject %q does not have the template's four tokens", m.Subject())
			continue
		}
		var got key
		var ok1, ok2, ok3 bool
		got.tenant, ok1 = unescapeToken(toks[1])
		got.stream, ok2 = unescapeToken(toks[2])
		got.typ, ok3 = unescapeToken(toks[3])
		if !ok1 || !ok2 || !ok3 || got != k {
			t.Errorf("subject %q reads back as %q, the message is %q", m.Subject(), got, k)
		}
	}
	// A permission or filter on one tenant's subjects sees that tenant's
	// events and no other's: ask the server how many each filter matches.
	js, err := jetstream.New(srv.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tn := range tenants {
		filter := "eventlite." + natsjs.SanitizeToken(tn) + ".>"
		c, err := js.CreateConsumer(ctx, natsjs.DefaultStream, jetstream.ConsumerConfig{FilterSubject: filter, AckPolicy: jetstream.AckNonePolicy})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.CachedInfo().NumPending, uint64(len(evs)/len(tenants)); got != want {
			t.Errorf("filter %s matches %d messages, tenant %q has %d", filter, got, tn, want)
		}
	}
}

// A subject longer than the server reads is the event's fault, found
// before sending: the event is dead-lettered at its first attempt, the
// connection stays up, and the other streams are delivered in the same
// round. (The server closes a connection that sends a longer publish
// line, which looked like a broker that was down, for ever.)
func TestSubjectTooLongIsDeadLettered(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	ctx := context.Background()
	long := newEvent(t, strings.Repeat("a", 1000), map[string]any{"i": 1})
	if _, err := s.Append(ctx, "default", "long", store.NoStream, long); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, s, "default", "long", 1) // waits behind the dead letter
	others := append(appendEvents(t, s, "default", "other", 3), appendEvents(t, s, "acme", "other", 2)...)
	// Each {type} token of the long event is 1,000 bytes: 5,000 in all.
	p := newNATS(t, srv.URL(), natsjs.Options{Subject: "t.{type}.{type}.{type}.{type}.{type}"})
	bs := newBatches()
	r := newRelay(t, publish.Options{Store: s, Publisher: p, Once: true, MaxAttempts: 5, OnBatch: bs.add})
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var inc *publish.IncompleteError
	if err := r.Run(rctx); !errors.As(err, &inc) || inc.Pending != 1 {
		t.Fatalf("run: %v, want the long stream's second event left behind the dead letter", err)
	}
	dl, err := outbox.For(s).DeadLetters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(dl) != 1 || dl[0].Stream != "long" || dl[0].Attempts != 1 {
		t.Fatalf("dead letters %+v, want the long event after one attempt", dl)
	}
	if first := bs.all()[0]; first.DeadLettered != 1 || first.Down != nil {
		t.Errorf("first round %+v: want the long event dead-lettered in it", first)
	}
	if st := r.Stats(); st.Unreachable != 0 || st.Published != int64(len(others)) {
		t.Errorf("stats %+v: want %d published and no round unreachable", st, len(others))
	}
	if n := p.Conn().Stats().Reconnects; n != 0 {
		t.Errorf("the connection was lost %d time(s)", n)
	}
	if got := len(srv.Messages(t, natsjs.DefaultStream)); got != len(others) {
		t.Errorf("broker holds %d messages, want %d", got, len(others))
	}
}

// The limit is the server's, not a guess: the longest subject the
// publisher lets through is stored by a real server, and one byte more is
// refused before sending, with the connection still up.
func TestSubjectLengthLimitIsTheServers(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	p := newNATS(t, srv.URL(), natsjs.Options{Subject: "t.{type}.{type}.{type}.{type}"})
	var evs []envelope.Event
	for n := 1000; n <= 1024; n++ { // 4 x n + 5 bytes: across the 4,096-byte line
		evs = append(evs, envelope.Event{ID: strconv.Itoa(n), Source: "/s", Type: strings.Repeat("a", n), Tenant: "default", Stream: strconv.Itoa(n), StreamVersion: 1})
	}
	res := p.Publish(context.Background(), publish.Messages(evs...))
	sent, refused := 0, 0
	for i, r := range res {
		var tl *natsjs.SubjectTooLongError
		switch {
		case r.Err == nil && refused == 0:
			sent++
		case errors.As(r.Err, &tl) && publish.ClassOf(r.Err) == publish.Permanent && tl.Line > natsjs.DefaultMaxControlLine:
			if refused == 0 && tl.Line > natsjs.DefaultMaxControlLine+4 {
				t.Errorf("the first refused line is %d bytes: the limit is %d, a type one byte shorter should have passed", tl.Line, natsjs.DefaultMaxControlLine)
			}
			refused++
		default:
			t.Errorf("type of %d bytes: %v (after %d sent, %d refused)", len(evs[i].Type), r.Err, sent, refused)
		}
	}
	if sent == 0 || refused == 0 {
		t.Fatalf("%d sent, %d refused: the range should cross the limit", sent, refused)
	}
	if got := len(srv.Messages(t, natsjs.DefaultStream)); got != sent {
		t.Errorf("broker holds %d messages, %d were acknowledged", got, sent)
	}
	if n := p.Conn().Stats().Reconnects; n != 0 || !p.Conn().IsConnected() {
		t.Errorf("the connection was lost (%d reconnects)", n)
	}
}
