package pgdriver

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrBusy: the database was too busy to take the call in time (a
	// deadlock, a serialization failure, a lock wait past the busy timeout,
	// no pooled connection free within the acquire timeout). Nothing was
	// written; the call may be retried. Errors wrapping it are *BusyError.
	ErrBusy = errors.New("database busy")
	// ErrConflict: the stream's version is not the one the append expected.
	// Errors wrapping it are *ConflictError.
	ErrConflict = errors.New("version conflict")
	// ErrDuplicate: an event id is already stored for the tenant.
	ErrDuplicate = errors.New("duplicate event id")
	// ErrTxDone: the write transaction was already committed, rolled back,
	// or failed and must be rolled back.
	ErrTxDone = errors.New("write transaction done or failed")
)

// PostgreSQL error codes mapped to ErrBusy.
const (
	codeDeadlock      = "40P01" // deadlock_detected
	codeSerialization = "40001" // serialization_failure
	codeLockTimeout   = "55P03" // lock_not_available (lock_timeout)
	codeUnique        = "23505" // unique_violation
)

// BusyError is an ErrBusy with its cause: a PostgreSQL error code, or
// "pool" when no connection was free in time.
type BusyError struct {
	Op   string // what was being done: "append", "acquire", ...
	Code string // 40P01, 40001, 55P03, or "pool"
	Err  error
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s: database busy (%s): %v; retry later, or raise the busy timeout or pool size", e.Op, busyReason(e.Code), e.Err)
}

// Is makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

func (e *BusyError) Unwrap() error { return e.Err }

func busyReason(code string) string {
	switch code {
	case codeDeadlock:
		return "deadlock"
	case codeSerialization:
		return "serialization failure"
	case codeLockTimeout:
		return "lock wait past the busy timeout"
	case "pool":
		return "no pooled connection free within the acquire timeout"
	}
	return code
}

// ConflictError is an ErrConflict with the facts.
type ConflictError struct {
	Tenant, Stream   string
	Expected, Actual int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("append %s/%s: expected version %s, stream is at %d: read the stream again and retry",
		e.Tenant, e.Stream, expectedString(e.Expected), e.Actual)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// InputError says which argument of a call is wrong and what to give.
type InputError struct {
	Op, Field, Reason string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Op, e.Field, e.Reason)
}

// SchemaTooNewError: the schema was migrated by a newer eventlite.
type SchemaTooNewError struct {
	Schema         string
	Version, Known int
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema %q is at version %d, newer than this binary (%d): upgrade eventlite", e.Schema, e.Version, e.Known)
}

// classify maps PostgreSQL's busy errors to *BusyError and unique
// violations on the event id to ErrDuplicate; it wraps everything with op.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var be *BusyError
	if errors.As(err, &be) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeDeadlock, codeSerialization, codeLockTimeout:
			return &BusyError{Op: op, Code: pe.Code, Err: err}
		case codeUnique:
			if pe.ConstraintName == "events_tenant_event_id_key" {
				return fmt.Errorf("%s: %w: %v", op, ErrDuplicate, err)
			}
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}
