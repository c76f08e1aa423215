package scenario

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/eventlite/eventlite/store"
)

// Row is one row of a read model, its columns in the query's order.
// Integers of any Go type compare equal to the engine's int64, []byte to
// string.
type Row []any

// query runs q in a read snapshot of s and returns its rows, normalized.
func query(ctx context.Context, s *store.Store, q string, args ...any) ([]string, []Row, error) {
	var cols []string
	var out []Row
	err := s.View(ctx, func(tx *store.ReadTx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if cols, err = rows.Columns(); err != nil {
			return err
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			out = append(out, normalize(vals))
		}
		return rows.Err()
	})
	return cols, out, err
}

// normalize makes a row's values comparable across Go types and engines.
func normalize(r Row) Row {
	out := make(Row, len(r))
	for i, v := range r {
		out[i] = normalizeValue(v)
	}
	return out
}

func normalizeValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64, float64:
		return v
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC()
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	case reflect.String:
		return rv.String()
	}
	return v
}

func rowsEqual(a, b Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if tx, ok := x.(time.Time); ok {
			if ty, ok := y.(time.Time); !ok || !tx.Equal(ty) {
				return false
			}
			continue
		}
		if x != y {
			return false
		}
	}
	return true
}

func fmtRow(r Row) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = fmtCell(v)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func fmtCell(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case nil:
		return "NULL"
	}
	return fmt.Sprintf("%v", v)
}

func countRows(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// diffRows says how got differs from want, row by row and column by
// column; "" when they are equal.
func diffRows(cols []string, want, got []Row) string {
	return diffRowsAs(cols, want, got, "expected", "got")
}

// diffRowsAs is diffRows with other words for the two sides.
func diffRowsAs(cols []string, want, got []Row, ew, gw string) string {
	var b strings.Builder
	if len(want) != len(got) {
		fmt.Fprintf(&b, "%s %s, %s %s\n", ew, countRows(len(want)), gw, countRows(len(got)))
	}
	for i := 0; i < len(want) || i < len(got); i++ {
		n := i + 1
		switch {
		case i >= len(got):
			fmt.Fprintf(&b, "row %d: %s %s, %s none\n", n, ew, fmtRow(want[i]), gw)
		case i >= len(want):
			fmt.Fprintf(&b, "row %d: %s none, %s %s\n", n, ew, gw, fmtRow(got[i]))
		case len(want[i]) != len(got[i]):
			fmt.Fprintf(&b, "row %d: %s %d columns %s, %s %d %s\n", n, ew, len(want[i]), fmtRow(want[i]), gw, len(got[i]), fmtRow(got[i]))
		case !rowsEqual(want[i], got[i]):
			for c := range want[i] {
				if !rowsEqual(want[i][c:c+1], got[i][c:c+1]) {
					name := fmt.Sprintf("column %d", c+1)
					if c < len(cols) {
						name = "column " + cols[c]
					}
					fmt.Fprintf(&b, "row %d: %s: %s %s, %s %s (row %s)\n", n, name, ew, fmtCell(want[i][c]), gw, fmtCell(got[i][c]), fmtRow(got[i]))
				}
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	fmt.Fprintf(&b, "%s rows %s:", gw, strings.Join(cols, ", "))
	if len(got) == 0 {
		b.WriteString(" none")
	}
	for _, r := range got {
		b.WriteString("\n  " + fmtRow(r))
	}
	return b.String()
}
