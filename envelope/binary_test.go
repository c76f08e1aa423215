package envelope_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/eventlite/eventlite/envelope"
)

func TestDecodeBinary(t *testing.T) {
	attrs := map[string]string{
		"specversion": "1.0", "id": "e1", "source": "/orders", "type": "order.placed", "subject": "order-1",
		"time": "2026-01-02T03:04:05.5Z", "datacontenttype": "application/json", "tenant": "acme",
		"streamversion": "3", "position": "3000000001", "correlationid": "c", "causationid": "k", "traceparent": "00-x",
	}
	got, err := envelope.DecodeBinary(attrs, []byte(`{"total": 5}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := envelope.Event{ID: "e1", Source: "/orders", Type: "order.placed", Stream: "order-1",
		Time: time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC), DataContentType: "application/json", Data: []byte(`{"total":5}`),
		Tenant: "acme", StreamVersion: 3, Position: 3000000001, CorrelationID: "c", CausationID: "k",
		Extensions: map[string]any{"traceparent": "00-x"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	bin, err := envelope.DecodeBinary(map[string]string{"specversion": "1.0", "id": "b", "source": "/s", "type": "t",
		"datacontenttype": "application/octet-stream"}, []byte{0xff, 0x00}, 0)
	if err != nil || string(bin.Data) != "\xff\x00" {
		t.Errorf("binary data: %q %v", bin.Data, err)
	}
	for name, attrs := range map[string]map[string]string{
		"no id":         {"specversion": "1.0", "source": "/s", "type": "t"},
		"bad version":   {"specversion": "1.0", "id": "x", "source": "/s", "type": "t", "streamversion": "three"},
		"bad extension": {"specversion": "1.0", "id": "x", "source": "/s", "type": "t", "Bad.Name": "v"},
	} {
		if _, err := envelope.DecodeBinary(attrs, nil, 0); !errors.Is(err, envelope.ErrInvalidEvent) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := envelope.DecodeBinary(map[string]string{"specversion": "1.0", "id": "x", "source": "/s", "type": "t"}, []byte("{oops"), 0); !errors.Is(err, envelope.ErrInvalidEvent) {
		t.Errorf("invalid JSON payload: %v", err)
	}
}
