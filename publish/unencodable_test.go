package publish_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/outbox"
	"github.com/eventlite/eventlite/store/storetest"
)

// attrSink records, per event id, the value of one attribute as an HTTP
// sink received it (a header in binary mode, a JSON member in structured
// mode).
type attrSink struct {
	url  string
	attr string
	mu   sync.Mutex
	got  map[string]string
}

func newAttrSink(t *testing.T, attr string) *attrSink {
	t.Helper()
	s := &attrSink{attr: attr, got: map[string]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(s.handle)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.url = "http://" + ln.Addr().String() + "/"
	return s
}

func (s *attrSink) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		return
	}
	id, v := r.Header.Get("Ce-Id"), r.Header.Get("Ce-"+s.attr)
	if id == "" { // structured
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id, _ = m["id"].(string)
		v, _ = m[s.attr].(string)
	}
	s.mu.Lock()
	s.got[id] = v
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (s *attrSink) value(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.got[id]
	return v, ok
}

// lineSink is standard output: JSON Lines.
type lineSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *lineSink) value(t *testing.T, id, attr string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range strings.Split(strings.TrimSpace(s.buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if m["id"] == id {
			v, _ := m[attr].(string)
			return v, true
		}
	}
	return "", false
}

// corrupt writes a value into a stored event behind the store's back, as
// an event stored before eventlite refused such values would hold it.
func corrupt(t *testing.T, s *store.Store, id, column string, value any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+s.Path()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE events SET `+column+` = ? WHERE event_id = ?`, value, id)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("corrupt %s: %d rows", id, n)
	}
}

// storedAttrs is the events table's attrs column of an event with this
// correlation id and these other extensions (JSON), the other attributes
// empty: dataschema, correlationid, causationid and the extensions
// joined by NUL bytes.
func storedAttrs(correlation, extensions string) []byte {
	return []byte("\x00" + correlation + "\x00\x00" + extensions)
}

// An event already stored that a publisher cannot carry exactly is
// dead-lettered at its first attempt, by every publisher, and never
// reaches the destination; a publisher that can carry it delivers it
// unchanged. The other tenant's stream is delivered either way.
func TestUnencodableStoredEventIsDeadLetteredAtFirstAttempt(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	cases := []struct {
		name, column, attr string
		stored             any    // the column's value
		want               string // the attribute's value
		dead               map[string]bool
	}{
		// HTTP headers cannot carry a control character (Go's client
		// refuses it); JSON and NATS headers can.
		{"control character in an extension", "attrs", "note", storedAttrs("", `{"note":"a\u0001b"}`), "a\x01b",
			map[string]bool{"http": true}},
		// Neither kind of header carries a line break.
		{"line break in an attribute", "attrs", "correlationid", storedAttrs("x\r\ny", ""), "x\r\ny",
			map[string]bool{"nats": true, "http": true}},
		// JSON cannot carry invalid UTF-8; headers carry the bytes.
		{"invalid UTF-8 in an attribute", "attrs", "correlationid", storedAttrs("a\xffb", ""), "a\xffb",
			map[string]bool{"http-structured": true, "stdout": true}},
	}
	for _, tc := range cases {
		for _, dest := range []string{"nats", "http", "http-structured", "stdout"} {
			t.Run(tc.name+"/"+dest, func(t *testing.T) {
				s := storetest.MustOpen(t, nil)
				bad := appendEvents(t, s, "default", "bad", 1)[0]
				ok := appendEvents(t, s, "acme", "ok", 2)
				corrupt(t, s, bad.ID, tc.column, tc.stored)
				var (
					pub   publish.Publisher
					value func(id string) (string, bool)
				)
				switch dest {
				case "nats":
					stream := strings.ToUpper(strings.NewReplacer(" ", "", "-", "").Replace(tc.column + dest + bad.ID))
					pub = newNATS(t, srv.URL(), natsjs.Options{Stream: stream, Subject: "e" + strings.ToLower(bad.ID) + ".{tenant}"})
					value = func(id string) (string, bool) {
						for _, m := range srv.Messages(t, stream) {
							if m.Headers().Get("ce-id") == id {
								return m.Headers().Get("ce-" + tc.attr), true
							}
						}
						return "", false
					}
				case "http", "http-structured":
					sink := newAttrSink(t, tc.attr)
					p, err := publish.NewHTTP(publish.HTTPOptions{URL: sink.url, Structured: dest == "http-structured", Timeout: 5 * time.Second})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { p.Close() })
					pub, value = p, sink.value
				case "stdout":
					sink := &lineSink{}
					pub = publish.NewStdout(sink)
					value = func(id string) (string, bool) { return sink.value(t, id, tc.attr) }
				}
				bs := newBatches()
				r := newRelay(t, publish.Options{Store: s, Publisher: pub, Once: true, MaxAttempts: 5,
					RetryBase: time.Nanosecond, RetryMax: time.Nanosecond, OnBatch: bs.add})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if err := r.Run(ctx); err != nil {
					t.Fatalf("run: %v", err)
				}
				dl, err := outbox.For(s).DeadLetters(ctx, "")
				if err != nil {
					t.Fatal(err)
				}
				got, delivered := value(bad.ID)
				if tc.dead[dest] {
					if len(dl) != 1 || dl[0].EventID != bad.ID || dl[0].Attempts != 1 {
						t.Errorf("dead letters %+v: want %s dead-lettered at its first attempt", dl, bad.ID)
					}
					if rep := bs.all()[0]; rep.DeadLettered != 1 {
						t.Errorf("first round %+v: want the event dead-lettered in it", rep)
					}
					if delivered {
						t.Errorf("the destination received it anyway, with %q", got)
					}
				} else {
					if len(dl) != 0 {
						t.Errorf("dead letters %+v: this destination carries the value", dl)
					}
					if !delivered || got != tc.want {
						t.Errorf("delivered %v with %q, want %q", delivered, got, tc.want)
					}
				}
				for _, e := range ok {
					if _, delivered := value(e.ID); !delivered {
						t.Errorf("event %s of the other tenant was not delivered", e.ID)
					}
				}
			})
		}
	}
}

// The publisher says why: an *EncodeError, Permanent.
func TestEncodeErrorIsPermanent(t *testing.T) {
	sink := newAttrSink(t, "note")
	p, err := publish.NewHTTP(publish.HTTPOptions{URL: sink.url})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s := storetest.MustOpen(t, nil)
	e := appendEvents(t, s, "default", "s", 1)[0]
	e.Extensions = map[string]any{"note": "a\x00b"}
	res := p.Publish(context.Background(), publish.Messages(e))
	var ee *publish.EncodeError
	if !errors.As(res[0].Err, &ee) || ee.Attribute != "note" || publish.ClassOf(res[0].Err) != publish.Permanent {
		t.Fatalf("got %v (class %v), want a Permanent *EncodeError naming note", res[0].Err, publish.ClassOf(res[0].Err))
	}
}
