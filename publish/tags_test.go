package publish_test

import (
	"context"
	"slices"
	"testing"

	"github.com/eventlite/eventlite/natsjs"
	"github.com/eventlite/eventlite/natsjs/natstest"
	"github.com/eventlite/eventlite/publish"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/storetest"
)

// TestRelayCarriesTags: an event appended with tags reaches the broker
// with the eventlitetags extension (ce-eventlitetags), and decodes with
// the same tags, separator and escape included.
func TestRelayCarriesTags(t *testing.T) {
	srv := natstest.RunJetStream(t, nil)
	s := storetest.MustOpen(t, nil)
	tags := []string{"course:c1", `a,b`, `\`, `x\,y`}
	e := newEvent(t, "course.defined", map[string]int{"n": 1})
	e.Tags = tags
	if _, err := s.Append(context.Background(), "default", "c1", store.NoStream, e); err != nil {
		t.Fatal(err)
	}
	r := newRelay(t, publish.Options{Store: s, Publisher: newNATS(t, srv.URL(), natsjs.Options{}), Once: true})
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages(t, natsjs.DefaultStream)
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	if h := msgs[0].Headers().Get("ce-eventlitetags"); h != `course:c1,a\,b,\\,x\\\,y` {
		t.Errorf("ce-eventlitetags %q", h)
	}
	if got := decodeNATS(t, msgs[0]); !slices.Equal(got.Tags, tags) {
		t.Errorf("delivered tags %q, want %q", got.Tags, tags)
	}
}
