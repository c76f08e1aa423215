// Package timecol encodes an event time in one SQLite column without loss.
//
// PostgreSQL's driver uses it too: its column is BIGINT Unix nanoseconds
// only, so it refuses a time that would need the text form.
//
// An instant that Unix nanoseconds in an int64 can hold (1677-09-21 to
// 2262-04-11) is stored as that INTEGER, as every eventlite database has
// always stored it; any other instant RFC 3339 can write (years 0000-9999)
// is stored as TEXT in RFC 3339 with nanoseconds, in UTC. Reading accepts
// both, so rows written before are read as they are and never rewritten.
// Never compare the column in SQL across the two forms: SQLite orders
// every INTEGER before every TEXT.
package timecol

import (
	"fmt"
	"math"
	"time"
)

var (
	minNanos = time.Unix(0, math.MinInt64).UTC()
	maxNanos = time.Unix(0, math.MaxInt64).UTC()
)

// Nanos reports whether Unix nanoseconds in an int64 hold t, so that
// Value stores it as an integer.
func Nanos(t time.Time) bool { return !t.Before(minNanos) && !t.After(maxNanos) }

// Value returns the column value for t: int64 Unix nanoseconds when they
// hold t, otherwise t in UTC as RFC 3339 text with nanoseconds.
func Value(t time.Time) any {
	if Nanos(t) {
		return t.UnixNano()
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Time scans a column written by Value. Set is false for NULL.
type Time struct {
	T   time.Time
	Set bool
}

// Scan implements sql.Scanner.
func (c *Time) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		c.T, c.Set = time.Unix(0, v).UTC(), true
	case string:
		return c.parse(v)
	case []byte:
		return c.parse(string(v))
	case nil:
		c.T, c.Set = time.Time{}, false
	default:
		return fmt.Errorf("time column: unexpected %T", src)
	}
	return nil
}

func (c *Time) parse(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("time column: %q is not RFC 3339: %w", s, err)
	}
	c.T, c.Set = t.UTC(), true
	return nil
}
