package decision_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/eventlite/eventlite/decision"
	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
)

// The code of docs/consistency.md: a user name unique across all users,
// and a course that takes at most its capacity of students while a
// student takes at most 5 courses.

// Events.
type UserRegistered struct {
	UserID string `json:"user_id"`
	Name   string `json:"name"`
}
type CourseDefined struct {
	CourseID string `json:"course_id"`
	Capacity int    `json:"capacity"`
}
type StudentSubscribed struct {
	StudentID string `json:"student_id"`
	CourseID  string `json:"course_id"`
}

// Commands.
type RegisterUser struct {
	UserID string `json:"user_id"`
	Name   string `json:"name"`
}
type SubscribeStudent struct {
	StudentID string `json:"student_id"`
	CourseID  string `json:"course_id"`
}

var (
	ErrNameTaken         = errors.New("the user name is taken")
	ErrNoCourse          = errors.New("no such course")
	ErrCourseFull        = errors.New("the course is full")
	ErrTooManyCourses    = errors.New("the student takes the most courses allowed")
	ErrAlreadySubscribed = errors.New("the student already takes the course")
)

// MaxCoursesPerStudent is how many courses a student may take at once.
const MaxCoursesPerStudent = 5

func schoolRegistry() *envelope.Registry {
	var r envelope.Registry
	r.SetSource("/school")
	envelope.Register[UserRegistered](&r, "user.registered")
	envelope.Register[CourseDefined](&r, "course.defined")
	envelope.Register[StudentSubscribed](&r, "student.subscribed")
	return &r
}

// NewRegisterUser returns the decision that registers a user under a
// name no other user has. Its boundary is every registration of the
// name, whatever the user's stream.
func NewRegisterUser(s *store.Store, reg *envelope.Registry) (*decision.Handler[bool, RegisterUser], error) {
	var ev decision.Evolvers[bool]
	decision.On(&ev, func(_ bool, _ decision.EventOf[UserRegistered]) bool { return true })
	return decision.New(s, decision.Definition[bool, RegisterUser]{
		Name:     "register_user",
		Registry: reg,
		Evolvers: &ev,
		Query: func(c RegisterUser) store.Query {
			return store.Query{Items: []store.QueryItem{
				{Types: []string{"user.registered"}, Tags: []string{"username:" + c.Name}},
			}}
		},
		Decide: func(taken bool, c decision.Command[RegisterUser]) ([]decision.Event, error) {
			if taken {
				return nil, ErrNameTaken
			}
			return []decision.Event{{
				Stream:  "user-" + c.Payload.UserID,
				Tags:    []string{"user:" + c.Payload.UserID, "username:" + c.Payload.Name},
				Payload: UserRegistered(c.Payload),
			}}, nil
		},
	}, nil)
}

// Subscription is what a subscription decides on: the course's
// capacity and subscribers, the student's courses.
type Subscription struct {
	Course, Student string
	Defined         bool
	Capacity        int
	Subscribers     int // students of the course
	StudentCourses  int // courses of the student
	Subscribed      bool
}

// NewSubscribeStudent returns the decision that subscribes a student to
// a course. Its boundary spans two entities: the course (its definition
// and its subscriptions) and the student (their subscriptions).
func NewSubscribeStudent(s *store.Store, reg *envelope.Registry, opts *decision.Options) (*decision.Handler[Subscription, SubscribeStudent], error) {
	var ev decision.Evolvers[Subscription]
	decision.On(&ev, func(st Subscription, e decision.EventOf[CourseDefined]) Subscription {
		st.Defined, st.Capacity = true, e.Payload.Capacity
		return st
	})
	decision.On(&ev, func(st Subscription, e decision.EventOf[StudentSubscribed]) Subscription {
		course, student := e.Payload.CourseID == st.Course, e.Payload.StudentID == st.Student
		if course {
			st.Subscribers++
		}
		if student {
			st.StudentCourses++
		}
		st.Subscribed = st.Subscribed || course && student
		return st
	})
	return decision.New(s, decision.Definition[Subscription, SubscribeStudent]{
		Name:     "subscribe_student",
		Registry: reg,
		Evolvers: &ev,
		Initial: func(c SubscribeStudent) Subscription {
			return Subscription{Course: c.CourseID, Student: c.StudentID}
		},
		Query: func(c SubscribeStudent) store.Query {
			return store.Query{Items: []store.QueryItem{
				// The course: its definition and its subscriptions.
				{Types: []string{"course.defined", "student.subscribed"}, Tags: []string{"course:" + c.CourseID}},
				// The student's subscriptions, to any course.
				{Types: []string{"student.subscribed"}, Tags: []string{"student:" + c.StudentID}},
			}}
		},
		Decide: func(st Subscription, c decision.Command[SubscribeStudent]) ([]decision.Event, error) {
			switch {
			case !st.Defined:
				return nil, ErrNoCourse
			case st.Subscribed:
				return nil, ErrAlreadySubscribed
			case st.Subscribers >= st.Capacity:
				return nil, ErrCourseFull
			case st.StudentCourses >= MaxCoursesPerStudent:
				return nil, ErrTooManyCourses
			}
			return []decision.Event{{
				Stream:  "student-" + c.Payload.StudentID,
				Tags:    []string{"student:" + c.Payload.StudentID, "course:" + c.Payload.CourseID},
				Payload: StudentSubscribed(c.Payload),
			}}, nil
		},
	}, opts)
}

// DefineCourse appends a course's definition to its own stream, tagged
// so that the subscription decision finds it.
func DefineCourse(ctx context.Context, s *store.Store, reg *envelope.Registry, tenant, course string, capacity int) error {
	e, err := reg.Encode("course.defined", CourseDefined{CourseID: course, Capacity: capacity})
	if err != nil {
		return err
	}
	e.Tags = []string{"course:" + course}
	_, err = s.Append(ctx, tenant, "course-"+course, store.NoStream, e)
	return err
}

// A user name is unique across all users, although each user has a
// stream of their own: the decision reads every registration of the
// name.
func Example_uniqueUserName() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "eventlite-example")
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "users.db"), nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	register, err := NewRegisterUser(s, schoolRegistry())
	if err != nil {
		panic(err)
	}
	for _, c := range []RegisterUser{{"u1", "alice"}, {"u2", "bob"}, {"u3", "alice"}} {
		res, err := register.Handle(ctx, decision.Command[RegisterUser]{OperationID: "register-" + c.UserID, Payload: c})
		if err != nil {
			fmt.Printf("%s as %s: %v\n", c.UserID, c.Name, err)
			continue
		}
		fmt.Printf("%s as %s: registered in %s at position %d\n", c.UserID, c.Name, res.Streams[0], res.LastPosition())
	}
	// Output:
	// u1 as alice: registered in user-u1 at position 1
	// u2 as bob: registered in user-u2 at position 2
	// u3 as alice: the user name is taken
}

// A course takes at most its capacity of students, and a student at
// most 5 courses: one decision reads both boundaries.
func Example_courseSubscription() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "eventlite-example")
	defer os.RemoveAll(dir)
	s, err := store.Open(ctx, filepath.Join(dir, "school.db"), nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	reg := schoolRegistry()
	for i := 1; i <= 6; i++ {
		if err := DefineCourse(ctx, s, reg, "default", fmt.Sprintf("c%d", i), 30); err != nil {
			panic(err)
		}
	}
	subscribe, err := NewSubscribeStudent(s, reg, nil)
	if err != nil {
		panic(err)
	}
	send := func(student, course string) error {
		_, err := subscribe.Handle(ctx, decision.Command[SubscribeStudent]{Payload: SubscribeStudent{StudentID: student, CourseID: course}})
		return err
	}
	// 30 students fill course c1; the 31st is refused.
	for i := 1; i <= 30; i++ {
		if err := send(fmt.Sprintf("s%d", i), "c1"); err != nil {
			panic(err)
		}
	}
	fmt.Println("s31 to c1:", send("s31", "c1"))
	// s1 takes c1 already; c2 to c5 make five courses; c6 is one too many.
	for _, c := range []string{"c2", "c3", "c4", "c5", "c6"} {
		fmt.Printf("s1 to %s: %v\n", c, send("s1", c))
	}
	fmt.Println("s1 to c1:", send("s1", "c1"))
	fmt.Println("s2 to c9:", send("s2", "c9"))
	// Output:
	// s31 to c1: the course is full
	// s1 to c2: <nil>
	// s1 to c3: <nil>
	// s1 to c4: <nil>
	// s1 to c5: <nil>
	// s1 to c6: the student takes the most courses allowed
	// s1 to c1: the student already takes the course
	// s2 to c9: no such course
}
