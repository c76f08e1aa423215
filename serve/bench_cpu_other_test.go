//go:build !unix

package serve_test

import (
	"testing"
	"time"
)

// processCPU is not measured here: the benchmarks leave out their CPU
// figures.
func processCPU(*testing.B) (time.Duration, bool) { return 0, false }
