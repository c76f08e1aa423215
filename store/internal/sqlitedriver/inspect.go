package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// FileHeader opens the file mode=ro and reads PRAGMA user_version and
// application_id, two numbers in its header.
func (Exec) FileHeader(ctx context.Context, path string) (driver.FileHeader, error) {
	db, err := sql.Open("sqlite", fileURI(path, "mode=ro", "_pragma=busy_timeout(5000)"))
	if err != nil {
		return driver.FileHeader{}, err
	}
	defer db.Close()
	var h driver.FileHeader
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&h.SchemaVersion); err != nil {
		return driver.FileHeader{}, err
	}
	if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&h.ApplicationID); err != nil {
		return driver.FileHeader{}, err
	}
	return h, nil
}

// SetApplicationID sets PRAGMA application_id, which takes no bound
// argument.
func (Exec) SetApplicationID(ctx context.Context, q driver.Querier, id int32) error {
	_, err := q.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", id))
	return err
}
