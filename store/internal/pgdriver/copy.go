package pgdriver

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/eventlite/eventlite/store/internal/driver"
)

var _ driver.CopyTarget = Exec{}

// maxParams is the most values one statement binds: PostgreSQL's wire
// protocol counts them in 16 bits.
const maxParams = 65535

// copyBatchRows caps the rows of one INSERT, whatever the columns.
const copyBatchRows = 1000

// CopyColumns is table's shape: PostgreSQL keeps every column as it is.
func (x Exec) CopyColumns(ctx context.Context, q driver.ReadQuerier, table string) (driver.TableShape, error) {
	return x.TableColumns(ctx, q, table)
}

// CopySequence reads log_head.position, the last position handed out (no
// stored position is above it; the newest one is read too, so that a
// head row left behind reads no lower than the log).
func (Exec) CopySequence(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var seq int64
	err := q.QueryRowContext(ctx, `SELECT GREATEST((SELECT position FROM log_head),
		COALESCE((SELECT MAX(position) FROM events), 0))`).Scan(&seq)
	return seq, err
}

// CopyInsert inserts rows with multi-row INSERTs of at most
// copyBatchRows rows, each value converted to its column's type first.
func (x Exec) CopyInsert(ctx context.Context, q driver.Querier, table string, cols []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	types, err := columnTypes(ctx, q, table)
	if err != nil {
		return err
	}
	conv := make([]func(any) (any, error), len(cols))
	for i, c := range cols {
		t, ok := types[c]
		if !ok {
			return fmt.Errorf("copy into %s: no column %s: %w", table, c, driver.ErrUnsupported)
		}
		if conv[i] = converter(t); conv[i] == nil {
			return fmt.Errorf("copy into %s: column %s of type %s: %w", table, c, t, driver.ErrUnsupported)
		}
	}
	per := min(copyBatchRows, maxParams/len(cols))
	head := `INSERT INTO ` + QuoteIdent(table) + ` (` + x.QuoteList(cols) + `) VALUES `
	for len(rows) > 0 {
		chunk := rows[:min(per, len(rows))]
		rows = rows[len(chunk):]
		var b strings.Builder
		b.WriteString(head)
		args := make([]any, 0, len(chunk)*len(cols))
		for r, row := range chunk {
			if len(row) != len(cols) {
				return fmt.Errorf("copy into %s: a row of %d values for %d columns", table, len(row), len(cols))
			}
			if r > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('(')
			for i, v := range row {
				cv, err := conv[i](v)
				if err != nil {
					return fmt.Errorf("copy into %s: column %s: %w", table, cols[i], err)
				}
				args = append(args, cv)
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteByte('$')
				b.WriteString(strconv.Itoa(len(args)))
			}
			b.WriteByte(')')
		}
		if _, err := q.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("copy into %s: %w", table, err)
		}
	}
	return nil
}

// columnTypes reads the data type of each of table's columns.
func columnTypes(ctx context.Context, q driver.ReadQuerier, table string) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types := map[string]string{}
	for rows.Next() {
		var c, t string
		if err := rows.Scan(&c, &t); err != nil {
			return nil, err
		}
		types[c] = t
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(types) == 0 {
		return nil, fmt.Errorf("copy into %s: no such table: %w", table, driver.ErrUnsupported)
	}
	return types, nil
}

// converter returns the conversion of a copied value to a column of the
// data type t, nil for a type the store's tables do not use.
func converter(t string) func(any) (any, error) {
	switch t {
	case "bigint", "integer", "smallint":
		return toInt
	case "bytea":
		return toBytes
	case "text":
		return toText
	}
	return nil
}

// toInt keeps an integer; SQLite may also hold an integral REAL, or text
// that reads as an integer, in an INTEGER column.
func toInt(v any) (any, error) {
	switch v := v.(type) {
	case nil, int64:
		return v, nil
	case float64:
		if v == math.Trunc(v) && v >= math.MinInt64 && v < math.MaxInt64 {
			return int64(v), nil
		}
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, nil
		}
	case []byte:
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%T %v is not an integer: %w", v, v, driver.ErrUnsupported)
}

// toBytes keeps bytes; text becomes its bytes, an integer its decimal
// text (as SQLite's CAST to BLOB gives).
func toBytes(v any) (any, error) {
	switch v := v.(type) {
	case nil, []byte:
		return v, nil
	case string:
		return []byte(v), nil
	case int64:
		return []byte(strconv.FormatInt(v, 10)), nil
	}
	return nil, fmt.Errorf("%T %v cannot be stored as bytes exactly: %w", v, v, driver.ErrUnsupported)
}

// toText keeps text that PostgreSQL can hold: UTF-8 without a NUL byte.
func toText(v any) (any, error) {
	var s string
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		s = v
	case []byte:
		s = string(v)
	case int64:
		return strconv.FormatInt(v, 10), nil
	default:
		return nil, fmt.Errorf("%T %v cannot be stored as text exactly: %w", v, v, driver.ErrUnsupported)
	}
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("text %q is not UTF-8 without NUL bytes, which PostgreSQL's text requires: %w", s, driver.ErrUnsupported)
	}
	return s, nil
}

// CopyDelete deletes table's rows.
func (Exec) CopyDelete(ctx context.Context, q driver.Querier, table string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM `+QuoteIdent(table))
	return err
}

// CopySetSequence raises log_head.position.
func (Exec) CopySetSequence(ctx context.Context, q driver.Querier, pos int64) error {
	_, err := q.ExecContext(ctx, `UPDATE log_head SET position = GREATEST(position, $1)`, pos)
	return err
}

// CopyIdentity sets the identity's sequence so that its next value is
// one past the largest id stored (1 in an empty table).
func (Exec) CopyIdentity(ctx context.Context, q driver.Querier, table, col string) error {
	_, err := q.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(MAX(`+QuoteIdent(col)+`), 0) + 1, false) FROM `+QuoteIdent(table),
		QuoteIdent(table), col)
	return err
}
