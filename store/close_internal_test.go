package store

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestCloseErrKeepsRealFailures: at Close, an error that only says the
// server had ended a session is left out; any other error is returned,
// and on SQLite (a file, no session) nothing is left out.
func TestCloseErrKeepsRealFailures(t *testing.T) {
	ended := &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
	real := &pgconn.PgError{Severity: "ERROR", Code: "XX000", Message: "could not close"}
	other := errors.New("flush: no space left on device")
	for _, tt := range []struct {
		name   string
		server bool
		errs   []error
		want   []error // errors.Is must hold for each
		absent []error // errors.Is must not hold for any
	}{
		{"ended sessions only", true, []error{nil, ended, fmt.Errorf("close: %w", sql.ErrConnDone), pgconn.ErrConnClosed}, nil, []error{ended, sql.ErrConnDone}},
		{"a real failure beside ended sessions", true, []error{ended, real, other}, []error{real, other}, []error{ended}},
		{"a file keeps everything", false, []error{ended, other}, []error{ended, other}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := closeErr(tt.server, append([]error(nil), tt.errs...))
			if tt.want == nil && got != nil {
				t.Fatalf("closeErr = %v, want nil", got)
			}
			for _, w := range tt.want {
				if !errors.Is(got, w) {
					t.Errorf("closeErr = %v, want it to hold %v", got, w)
				}
			}
			for _, a := range tt.absent {
				if got != nil && errors.Is(got, a) {
					t.Errorf("closeErr = %v, holds %v", got, a)
				}
			}
		})
	}
}
