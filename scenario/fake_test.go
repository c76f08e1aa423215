package scenario_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/eventlite/eventlite/scenario"
)

// fakeT is a scenario.T that records failures instead of failing the
// test, so the kit's own tests run scenarios that must fail and assert
// what they say. Fatalf ends the scenario's goroutine, as testing does.
type fakeT struct {
	name     string
	dir      string
	mu       sync.Mutex
	errs     []string
	fatal    string
	logs     []string
	cleanups []func()
}

var _ scenario.T = (*fakeT)(nil)
var _ scenario.T = (*testing.T)(nil)
var _ scenario.T = (*testing.B)(nil)

func (f *fakeT) Helper()      {}
func (f *fakeT) Name() string { return f.name }
func (f *fakeT) TempDir() string {
	d, err := os.MkdirTemp(f.dir, "")
	if err != nil {
		panic(err)
	}
	return d
}
func (f *fakeT) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeT) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

// runFake runs fn against a fake T named name, in a goroutine of its own
// (Fatalf ends it), then the cleanups fn registered.
func runFake(t *testing.T, name string, fn func(scenario.T)) *fakeT {
	t.Helper()
	f := &fakeT{name: name, dir: t.TempDir()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	return f
}

// output is everything the scenario reported.
func (f *fakeT) output() string {
	s := strings.Join(f.errs, "\n")
	if f.fatal != "" {
		s += "\nFATAL: " + f.fatal
	}
	return s
}

// mustPass fails t when the scenario reported anything.
func (f *fakeT) mustPass(t *testing.T) {
	t.Helper()
	if out := f.output(); out != "" {
		t.Fatalf("the scenario failed:\n%s", out)
	}
}

// mustFail requires the scenario to have failed (not fatally) with a
// message holding every want, naming the scenario and no file of the kit.
func (f *fakeT) mustFail(t *testing.T, want ...string) {
	t.Helper()
	if f.fatal != "" {
		t.Fatalf("the scenario could not run: %s", f.fatal)
	}
	if len(f.errs) == 0 {
		t.Fatalf("the scenario passed; want a failure saying %q", want)
	}
	out := f.output()
	want = append(want, "scenario "+f.name)
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the failure lacks %q:\n%s", w, out)
		}
	}
	for _, frame := range []string{".go:", "goroutine ", "panic"} {
		if strings.Contains(out, frame) {
			t.Errorf("the failure shows an internal frame (%q):\n%s", frame, out)
		}
	}
	t.Logf("the failure reads:\n%s", out)
}
