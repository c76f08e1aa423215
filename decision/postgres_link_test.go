package decision_test

// The tests run on PostgreSQL too when EVENTLITE_TEST_POSTGRES is set:
// the test binary links the driver by import, as a program does.
import _ "github.com/eventlite/eventlite/store/postgres"
