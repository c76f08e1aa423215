package pgdriver

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/eventlite/eventlite/store/internal/driver"
)

var _ driver.Notifier = Driver{}

// channel is the LISTEN/NOTIFY channel of a schema's commits: every write
// transaction notifies it (BeginWriteSQL), and the notification is
// delivered when, and only if, the transaction commits.
func channel(schema string) string { return "eventlite_" + schema }

// Listen runs LISTEN on conn for its schema's channel.
func (Driver) Listen(ctx context.Context, conn *sql.Conn) error {
	var schema string
	if err := conn.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, `LISTEN `+pgx.Identifier{channel(schema)}.Sanitize())
	return err
}

// WaitWake waits for a notification on conn. pgx keeps the connection
// when the wait's context ends (a timeout, not a failure), so the poller
// waits again on the same connection.
func (Driver) WaitWake(ctx context.Context, conn *sql.Conn) (bool, error) {
	woke := false
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("pgdriver: not a pgx connection")
		}
		_, err := c.Conn().WaitForNotification(ctx)
		if err == nil {
			woke = true
			return nil
		}
		if ctx.Err() != nil && !c.Conn().IsClosed() {
			return nil
		}
		return err
	})
	return woke, err
}
