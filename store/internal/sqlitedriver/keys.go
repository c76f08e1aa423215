package sqlitedriver

import (
	"context"
	"fmt"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// eraseCopyQuery sets a structured-JSON event copy (column %[2]s of
// table %[1]s) of subject ?2's events of tenant ?1 to the copy without
// its data and its tags (the eventlitetags extension), marked
// dataerased: true.
const eraseCopyQuery = `UPDATE %[1]s
	SET %[2]s = CAST(json_set(json_remove(CAST(%[2]s AS TEXT), '$.data', '$.data_base64', '$.` + envelope.ExtTags + `'), '$.dataerased', json('true')) AS BLOB)
	WHERE tenant = ?1 AND %[2]s IS NOT NULL AND json_valid(CAST(%[2]s AS TEXT))
	AND json_extract(CAST(%[2]s AS TEXT), '$.erasurekey') = ?2`

// copyColumns is the column that holds the copy, per kind (the kind is
// the table).
var copyColumns = map[driver.CopyKind]string{
	driver.CopiesQuarantine:       "event",
	driver.CopiesDeferred:         "event",
	driver.CopiesVersionConflicts: "conflicting_event",
}

// EraseCopies rewrites the copies' JSON without their data and tags.
func (Exec) EraseCopies(ctx context.Context, q driver.Querier, kind driver.CopyKind, tenant, subject string) (int64, error) {
	col, ok := copyColumns[kind]
	if !ok {
		return 0, fmt.Errorf("no copies of events kept as %q", kind)
	}
	if kind == driver.CopiesQuarantine {
		// Before the copy loses its data: the match reads the copy.
		if _, err := q.ExecContext(ctx, `UPDATE quarantine SET error = ?3
			WHERE tenant = ?1 AND error <> '' AND error <> ?3 AND event IS NOT NULL AND json_valid(CAST(event AS TEXT))
			AND json_extract(CAST(event AS TEXT), '$.erasurekey') = ?2`, tenant, subject, driver.ErasedError); err != nil {
			return 0, err
		}
	}
	res, err := q.ExecContext(ctx, fmt.Sprintf(eraseCopyQuery, kind, col), tenant, subject)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, nil
}
