package sqlitedriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

var _ driver.CopySource = Exec{}

// CopyColumns is table's shape, with the events' attrs column named as
// the four it joins.
func (x Exec) CopyColumns(ctx context.Context, q driver.ReadQuerier, table string) (driver.TableShape, error) {
	sh, err := x.TableColumns(ctx, q, table)
	if err != nil || table != "events" {
		return sh, err
	}
	var cols []string
	for _, c := range sh.Cols {
		if c == "attrs" {
			cols = append(cols, "data_schema", "correlation_id", "causation_id", "extensions")
			continue
		}
		cols = append(cols, c)
	}
	sh.Cols = cols
	return sh, nil
}

// eventAttrColumns are the columns attrs joins, as SQL over it.
var eventAttrColumns = map[string]string{
	"data_schema":    DataSchemaSQL,
	"correlation_id": CorrelationIDSQL,
	"causation_id":   CausationIDSQL,
	"extensions":     ExtensionsSQL,
}

// CopySequence is the rule of the writer's StreamStateSQL: the highest
// position in the log or the floor a scavenge or restore recorded,
// whichever is higher.
func (Exec) CopySequence(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var seq int64
	err := q.QueryRowContext(ctx, `SELECT max(COALESCE((SELECT MAX(position) FROM events), 0),
		COALESCE((SELECT position FROM position_floor WHERE one = 1), 0))`).Scan(&seq)
	return seq, err
}
