package sqlitedriver

import (
	"strings"
	"testing"

	"github.com/eventlite/eventlite/envelope"
)

// TestSplitAttrs: the one attributes column splits into its four fields,
// extension numbers come back as int32, and a column without its four
// parts is an error, not a silent loss of attributes.
func TestSplitAttrs(t *testing.T) {
	var e envelope.Event
	if err := SplitAttrs([]byte("s\x00c\x00k\x00"+`{"n":7,"t":"x"}`), &e); err != nil {
		t.Fatal(err)
	}
	if e.DataSchema != "s" || e.CorrelationID != "c" || e.CausationID != "k" || e.Extensions["n"] != int32(7) || e.Extensions["t"] != "x" {
		t.Fatalf("split into %+v", e)
	}
	e = envelope.Event{}
	if err := SplitAttrs([]byte("\x00\x00c\x00"), &e); err != nil || e.CausationID != "c" || e.Extensions != nil {
		t.Fatalf("split into %+v, %v", e, err)
	}
	if err := SplitAttrs([]byte("s\x00c"), &e); err == nil || !strings.Contains(err.Error(), "has 2 parts, want 4") {
		t.Fatalf("short column: %v", err)
	}
}
