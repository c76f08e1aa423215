package pgdriver

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// The common reads, prepared on the read pool. Reads of a stream start at
// its first retained version (a truncate or a delete moved it); a stream
// without a row has none.
const (
	ReadStreamSQL = SelectStreamEvents + ` WHERE tenant = $1 AND stream_id = $2
			AND version >= GREATEST($3, (SELECT first_version FROM streams WHERE tenant = $1 AND stream_id = $2)) ORDER BY version LIMIT $4`
	ReadStreamBackwardSQL = SelectStreamEvents + ` WHERE tenant = $1 AND stream_id = $2 AND version <= $3
			AND version >= (SELECT first_version FROM streams WHERE tenant = $1 AND stream_id = $2) ORDER BY version DESC LIMIT $4`
	ReadAllSQL       = SelectEvents + ` WHERE position >= $1 ORDER BY position LIMIT $2`
	ReadAllTenantSQL = SelectEvents + ` WHERE position >= $1 AND tenant = $2 ORDER BY position LIMIT $3`
	// StreamVersionSQL reads a stream's version and lifecycle state; no
	// row: the stream does not exist.
	StreamVersionSQL = `SELECT COALESCE((SELECT max(version) FROM events e WHERE e.tenant = s.tenant AND e.stream_id = s.stream_id), 0), deleted
	FROM streams s WHERE s.tenant = $1 AND s.stream_id = $2`
)

type reader struct {
	db             *sql.DB
	streamForward  *sql.Stmt
	streamBackward *sql.Stmt
	all            *sql.Stmt
	allTenant      *sql.Stmt
	streamVersion  *sql.Stmt
}

// PrepareReader prepares the common reads on db.
func (Exec) PrepareReader(ctx context.Context, db *sql.DB) (driver.Reader, error) {
	r := &reader{db: db}
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = db.PrepareContext(ctx, q)
		return st
	}
	r.streamForward = prep(ReadStreamSQL)
	r.streamBackward = prep(ReadStreamBackwardSQL)
	r.all = prep(ReadAllSQL)
	r.allTenant = prep(ReadAllTenantSQL)
	r.streamVersion = prep(StreamVersionSQL)
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// Close closes the statements.
func (r *reader) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{r.streamForward, r.streamBackward, r.all, r.allTenant, r.streamVersion} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// ReadStream runs the prepared read of one stream.
func (r *reader) ReadStream(ctx context.Context, page []envelope.Event, tenant, stream string, from int64, backward bool, n int) ([]envelope.Event, error) {
	st := r.streamForward
	if backward {
		st = r.streamBackward
	}
	rows, err := st.QueryContext(ctx, tenant, stream, from, n)
	if err != nil {
		return page, err
	}
	return sqlshared.ScanEvents(rows, NewStreamEventScanner(tenant, stream), page)
}

// ReadAll runs a prepared read of the log when f selects by tenant at
// most, else builds the query.
func (r *reader) ReadAll(ctx context.Context, page []envelope.Event, f *driver.LogFilter, from int64, n int) ([]envelope.Event, error) {
	var (
		rows *sql.Rows
		err  error
	)
	switch {
	case f.Query != nil:
		q, args := driver.QueryRead(true, SelectEvents, f, from, n)
		rows, err = r.db.QueryContext(ctx, q, args...)
	case len(f.Types) > 0, f.StreamPrefix != "", f.CorrelationID != "", f.Backward:
		q, args := logQuery(f, from, n)
		rows, err = r.db.QueryContext(ctx, q, args...)
	case f.Tenant != "":
		rows, err = r.allTenant.QueryContext(ctx, from, f.Tenant, n)
	default:
		rows, err = r.all.QueryContext(ctx, from, n)
	}
	if err != nil {
		return page, err
	}
	return sqlshared.ScanEvents(rows, NewEventScanner(), page)
}

// logQuery builds the read of the log that f selects.
func logQuery(f *driver.LogFilter, from int64, n int) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Backward {
		where = append(where, "position <= "+arg(from))
	} else {
		where = append(where, "position >= "+arg(from))
	}
	if f.Tenant != "" {
		where = append(where, "tenant = "+arg(f.Tenant))
	}
	if len(f.Types) > 0 {
		ps := make([]string, len(f.Types))
		for i, t := range f.Types {
			ps[i] = arg(t)
		}
		where = append(where, "type IN ("+strings.Join(ps, ", ")+")")
	}
	if f.StreamPrefix != "" {
		where = append(where, "starts_with(stream_id, "+arg(f.StreamPrefix)+")")
	}
	if f.CorrelationID != "" {
		where = append(where, "correlation_id = "+arg(f.CorrelationID))
	}
	order := " ORDER BY position LIMIT "
	if f.Backward {
		order = " ORDER BY position DESC LIMIT "
	}
	order += arg(n)
	return SelectEvents + " WHERE " + strings.Join(where, " AND ") + order, args
}

// StreamVersion runs StreamVersionSQL.
func (r *reader) StreamVersion(ctx context.Context, tenant, stream string) (driver.StreamVersion, error) {
	v := driver.StreamVersion{Found: true}
	err := r.streamVersion.QueryRowContext(ctx, tenant, stream).Scan(&v.Version, &v.Deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return driver.StreamVersion{}, nil
	}
	if err != nil {
		return driver.StreamVersion{}, err
	}
	return v, nil
}
