package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSubtractRanges(t *testing.T) {
	h := hole{From: 5, To: 20, DetectedBy: "x"}
	for _, tc := range []struct {
		rs   []positionRange
		want []hole
	}{
		{nil, []hole{h}},
		{[]positionRange{{1, 30}}, nil},
		{[]positionRange{{5, 20}}, nil},
		{[]positionRange{{1, 4}, {21, 25}}, []hole{h}},
		{[]positionRange{{3, 6}}, []hole{{From: 7, To: 20, DetectedBy: "x"}}},
		{[]positionRange{{8, 9}, {12, 12}, {19, 40}}, []hole{{From: 5, To: 7, DetectedBy: "x"}, {From: 10, To: 11, DetectedBy: "x"}, {From: 13, To: 18, DetectedBy: "x"}}},
	} {
		if diff := cmp.Diff(tc.want, subtractRanges(h, tc.rs)); diff != "" {
			t.Errorf("subtract %v (-want +got)\n%s", tc.rs, diff)
		}
		var covered int64
		for _, r := range tc.rs {
			covered += max(0, min(r.To, h.To)-max(r.From, h.From)+1)
		}
		if got := removedCount(tc.rs, h.From, h.To); got != covered {
			t.Errorf("removedCount %v = %d, want %d", tc.rs, got, covered)
		}
	}
}
