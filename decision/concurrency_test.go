package decision_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventlite/eventlite/decision"
	"github.com/eventlite/eventlite/store"
)

// writers is how many writers race in the concurrency tests.
const writers = 16

// The course fixture: courses of a capacity, students who take at most
// MaxCoursesPerStudent courses, and writers that subscribe random
// students to random courses, more often than seats and limits allow:
// fewer seats (courses x capacity) than the students' places (students x
// 5), so that every course fills, more students than a course's
// capacity, and attempts enough to bring students to the limit first.
type courseFixture struct {
	courses, capacity, students, opsPerWriter int
}

// courseSeed is the writers' seed: 1, or EVENTLITE_SEED to replay
// another; the commands are then the same on every run, and only their
// interleaving differs.
func courseSeed(t *testing.T) uint64 {
	seed := uint64(1)
	if v := os.Getenv("EVENTLITE_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("EVENTLITE_SEED=%q: %v", v, err)
		}
		seed = n
	}
	t.Logf("seed %d (EVENTLITE_SEED=%d to replay)", seed, seed)
	return seed
}

func fixture() courseFixture {
	if testing.Short() {
		return courseFixture{courses: 8, capacity: 4, students: 6, opsPerWriter: 10}
	}
	return courseFixture{courses: 8, capacity: 20, students: 40, opsPerWriter: 30}
}

func (f courseFixture) define(t testing.TB, s *store.Store) {
	t.Helper()
	for c := range f.courses {
		if err := DefineCourse(context.Background(), s, schoolRegistry(), "default", fmt.Sprintf("c%d", c), f.capacity); err != nil {
			t.Fatal(err)
		}
	}
}

// outcome names a subscription's result as the writers report it.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrCourseFull):
		return "full"
	case errors.Is(err, ErrTooManyCourses):
		return "limit"
	case errors.Is(err, ErrAlreadySubscribed):
		return "already"
	}
	return "error"
}

// subscribeRandomly runs one writer's subscriptions, seeded, reporting
// each as "outcome student course".
func subscribeRandomly(ctx context.Context, h *decision.Handler[Subscription, SubscribeStudent], f courseFixture, seed uint64, report func(string)) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for range f.opsPerWriter {
		c := SubscribeStudent{StudentID: fmt.Sprintf("s%d", rng.IntN(f.students)), CourseID: fmt.Sprintf("c%d", rng.IntN(f.courses))}
		_, err := h.Handle(ctx, decision.Command[SubscribeStudent]{Payload: c})
		line := outcome(err) + " " + c.StudentID + " " + c.CourseID
		if outcome(err) == "error" {
			line += " " + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		report(line)
	}
}

// checkCourses checks the log against the limits and the writers'
// reports: no course above its capacity, no student above the limit, no
// subscription twice, one event per "ok", and every refusal justified
// by the final state (counts only grow: a course refused as full is
// full, a student refused at the limit is at it).
func checkCourses(t *testing.T, s *store.Store, f courseFixture, reports []string) {
	t.Helper()
	perCourse, perStudent, pairs := map[string]int{}, map[string]int{}, map[string]int{}
	q := store.Query{Items: []store.QueryItem{{Types: []string{"student.subscribed"}}}}
	reg := schoolRegistry()
	events := 0
	for e, err := range s.ReadAll(context.Background(), store.ReadAllOptions{Tenant: "default", Query: q}) {
		if err != nil {
			t.Fatal(err)
		}
		p, err := reg.Decode(e)
		if err != nil {
			t.Fatal(err)
		}
		sub := p.(StudentSubscribed)
		perCourse[sub.CourseID]++
		perStudent[sub.StudentID]++
		pairs[sub.StudentID+"/"+sub.CourseID]++
		events++
	}
	for c, n := range perCourse {
		if n > f.capacity {
			t.Errorf("course %s has %d students, capacity %d", c, n, f.capacity)
		}
	}
	for st, n := range perStudent {
		if n > MaxCoursesPerStudent {
			t.Errorf("student %s takes %d courses, at most %d allowed", st, n, MaxCoursesPerStudent)
		}
	}
	for p, n := range pairs {
		if n > 1 {
			t.Errorf("subscription %s stored %d times", p, n)
		}
	}
	oks, counts := 0, map[string]int{}
	for _, r := range reports {
		w := strings.Fields(r)
		counts[w[0]]++
		switch w[0] {
		case "ok":
			oks++
		case "full":
			if perCourse[w[2]] != f.capacity {
				t.Errorf("%s: refused as full, but the course has %d students", r, perCourse[w[2]])
			}
		case "limit":
			if perStudent[w[1]] != MaxCoursesPerStudent {
				t.Errorf("%s: refused at the limit, but the student takes %d courses", r, perStudent[w[1]])
			}
		case "already":
			if pairs[w[1]+"/"+w[2]] != 1 {
				t.Errorf("%s: refused as subscribed, but is not", r)
			}
		default:
			t.Errorf("writer: %s", r)
		}
	}
	if oks != events {
		t.Errorf("%d subscriptions reported ok, %d stored", oks, events)
	}
	// The fixture must reach both limits, or it proves nothing about them.
	if counts["full"] == 0 || counts["limit"] == 0 {
		t.Errorf("the writers never met a full course or a student at the limit (%v): the fixture is too small", counts)
	}
	t.Logf("outcomes %v; %d subscriptions stored", counts, events)
}

// TestUniqueNameConcurrentGoroutines: 16 goroutines claim one user name
// at the same time: exactly one wins, the others are told it is taken,
// and the log holds one registration of the name.
func TestUniqueNameConcurrentGoroutines(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		s, _ := eng.open(t, nil)
		h := mustRegister(t, s)
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				<-start
				_, errs[i] = h.Handle(ctx, decision.Command[RegisterUser]{Payload: RegisterUser{UserID: fmt.Sprintf("u%d", i), Name: "alice"}})
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrNameTaken):
				t.Errorf("writer %d: %v", i, err)
			}
		}
		if won != 1 {
			t.Errorf("%d writers won the name, want 1", won)
		}
		if got := byTag(t, s, "default", "username:alice"); len(got) != 1 {
			t.Errorf("%d registrations of alice stored, want 1", len(got))
		}
	})
}

// TestCoursesConcurrentGoroutines: 16 goroutines subscribe random
// students to random courses (seeded); no course passes its capacity,
// no student the limit.
func TestCoursesConcurrentGoroutines(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		s, _ := eng.open(t, nil)
		f := fixture()
		f.define(t, s)
		h := mustSubscribe(t, s, &decision.Options{MaxAttempts: 1000})
		seed := courseSeed(t)
		var mu sync.Mutex
		var reports []string
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				<-start
				subscribeRandomly(ctx, h, f, seed+uint64(w), func(r string) {
					mu.Lock()
					reports = append(reports, r)
					mu.Unlock()
				})
			})
		}
		close(start)
		wg.Wait()
		checkCourses(t, s, f, reports)
	})
}

// TestHelperProcess is not a test: the cross-process tests run the test
// binary again as a child with EVENTLITE_DECISION_HELPER set. The child
// opens the store, says "ready", waits for a line on stdin (so that all
// children start together), runs, and reports one line per decision.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("EVENTLITE_DECISION_HELPER")
	if mode == "" {
		return
	}
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
	// Sixteen processes queue for SQLite's write lock; on a loaded
	// machine under -race a process may wait past the default 5s.
	s, err := store.Open(ctx, os.Getenv("EVENTLITE_DB"), &store.Options{Synchronous: "NORMAL", BusyTimeout: 2 * time.Minute})
	if err != nil {
		fail(err)
	}
	var run func()
	switch mode {
	case "claim":
		h, err := NewRegisterUser(s, schoolRegistry())
		if err != nil {
			fail(err)
		}
		run = func() {
			_, err := h.Handle(ctx, decision.Command[RegisterUser]{Payload: RegisterUser{UserID: os.Getenv("EVENTLITE_USER"), Name: "alice"}})
			switch {
			case err == nil:
				fmt.Println("won")
			case errors.Is(err, ErrNameTaken):
				fmt.Println("taken")
			default:
				fmt.Println("error", err)
			}
		}
	case "courses":
		h, err := NewSubscribeStudent(s, schoolRegistry(), &decision.Options{MaxAttempts: 1000})
		if err != nil {
			fail(err)
		}
		seed, _ := strconv.ParseUint(os.Getenv("EVENTLITE_SEED"), 10, 64)
		run = func() { subscribeRandomly(ctx, h, fixture(), seed, func(r string) { fmt.Println(r) }) }
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail(err)
	}
	run()
	if err := s.Close(); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// runChildren starts one child per env, waits until each is ready,
// releases them together and returns their report lines (without
// "ready").
func runChildren(t *testing.T, envs [][]string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.run=^TestHelperProcess$"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	var children []child
	for _, env := range envs {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		children = append(children, child{cmd, stdin, bufio.NewScanner(out)})
	}
	for i, c := range children {
		if !c.out.Scan() || c.out.Text() != "ready" {
			t.Fatalf("child %d did not get ready: %q %v", i, c.out.Text(), c.out.Err())
		}
	}
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var lines []string
	var wg sync.WaitGroup
	for i, c := range children {
		wg.Go(func() {
			for c.out.Scan() {
				mu.Lock()
				lines = append(lines, c.out.Text())
				mu.Unlock()
			}
			if err := c.cmd.Wait(); err != nil {
				t.Errorf("child %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	return lines
}

// TestUniqueNameConcurrentProcesses: 16 processes claim one user name
// at the same time: exactly one wins.
func TestUniqueNameConcurrentProcesses(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		s, addr := eng.open(t, nil)
		var envs [][]string
		for i := range writers {
			envs = append(envs, []string{"EVENTLITE_DECISION_HELPER=claim", "EVENTLITE_DB=" + addr, fmt.Sprintf("EVENTLITE_USER=u%d", i)})
		}
		lines := runChildren(t, envs)
		won := 0
		for _, l := range lines {
			switch l {
			case "won":
				won++
			case "taken":
			default:
				t.Errorf("child: %s", l)
			}
		}
		if won != 1 || len(lines) != writers {
			t.Errorf("%d of %d processes won the name (%d answered), want 1", won, writers, len(lines))
		}
		if got := byTag(t, s, "default", "username:alice"); len(got) != 1 {
			t.Errorf("%d registrations of alice stored, want 1", len(got))
		}
	})
}

// TestCoursesConcurrentProcesses: 16 processes subscribe random students
// to random courses (seeded); no course passes its capacity, no student
// the limit.
func TestCoursesConcurrentProcesses(t *testing.T) {
	onEngines(t, func(t *testing.T, eng engine) {
		s, addr := eng.open(t, nil)
		f := fixture()
		f.define(t, s)
		seed := courseSeed(t)
		var envs [][]string
		for w := range writers {
			envs = append(envs, []string{"EVENTLITE_DECISION_HELPER=courses", "EVENTLITE_DB=" + addr, fmt.Sprintf("EVENTLITE_SEED=%d", seed+uint64(w))})
		}
		checkCourses(t, s, f, runChildren(t, envs))
	})
}
