package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// T is what a scenario needs of a test: *testing.T, *testing.B and
// testing.TB satisfy it. A scenario reports a failed expectation with
// Errorf and a scenario it cannot run (a store that does not open, a
// handler that cannot be built) with Fatalf.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Name() string
	Cleanup(func())
	TempDir() string
}

// logger is the optional part of a T the kit uses to print a seed.
type logger interface {
	Logf(format string, args ...any)
}

// Timeout bounds one scenario on one engine: a scenario that waits
// longer fails instead of hanging the test.
const Timeout = time.Minute

// run is one scenario on one engine: its name for messages and its
// collected failures.
type run struct {
	t      T
	engine string
	both   bool // several engines ran: name the engine in messages
	what   string
	fails  []string
}

func (r *run) failf(format string, args ...any) {
	r.fails = append(r.fails, fmt.Sprintf(format, args...))
}

// prefix names the scenario (the test's name), the engine when several
// run, and what the scenario did.
func (r *run) prefix() string {
	var b strings.Builder
	b.WriteString("scenario ")
	b.WriteString(r.t.Name())
	if r.both {
		b.WriteString(" [" + r.engine + "]")
	}
	if r.what != "" {
		b.WriteString(": " + r.what)
	}
	return b.String()
}

// report hands the collected failures to t in one message.
func (r *run) report() {
	r.t.Helper()
	if len(r.fails) == 0 {
		return
	}
	r.t.Errorf("%s\n%s", r.prefix(), indent(strings.Join(r.fails, "\n"), "  "))
}

// fatal stops the scenario: it could not run.
func (r *run) fatal(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s: %s", r.prefix(), fmt.Sprintf(format, args...))
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = by + l
		}
	}
	return strings.Join(lines, "\n")
}

func scenarioContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), Timeout)
}
