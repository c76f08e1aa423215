package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/driver/sqlshared"
)

// The common reads, prepared on the read pool. Reads of a stream start at
// its first retained version (a truncate or a delete moved it); a stream
// without a row has none.
const (
	streamForwardWhere = ` WHERE tenant = ?1 AND stream_id = ?2
			AND version >= max(?3, (SELECT first_version FROM streams WHERE tenant = ?1 AND stream_id = ?2)) ORDER BY version LIMIT ?4`
	streamBackwardWhere = ` WHERE tenant = ?1 AND stream_id = ?2 AND version <= ?3
			AND version >= (SELECT first_version FROM streams WHERE tenant = ?1 AND stream_id = ?2) ORDER BY version DESC LIMIT ?4`
	allWhere               = ` WHERE position >= ? ORDER BY position LIMIT ?`
	allTenantWhere         = ` WHERE position >= ? AND tenant = ? ORDER BY position LIMIT ?`
	allBackwardWhere       = ` WHERE position <= ? ORDER BY position DESC LIMIT ?`
	allTenantBackwardWhere = ` WHERE position <= ? AND tenant = ? ORDER BY position DESC LIMIT ?`
	// A tenant's page over a window of ?4 positions (see ReadAll).
	tenantWindowWhere     = ` WHERE position >= ?1 AND position < ?1 + ?4 AND +tenant = ?2 ORDER BY position LIMIT ?3`
	tenantWindowBackWhere = ` WHERE position <= ?1 AND position > ?1 - ?4 AND +tenant = ?2 ORDER BY position DESC LIMIT ?3`

	ReadStreamSQL         = SelectStreamEvents + streamForwardWhere
	ReadStreamBackwardSQL = SelectStreamEvents + streamBackwardWhere
	ReadAllSQL            = SelectEvents + allWhere
	ReadAllTenantSQL      = SelectEvents + allTenantWhere
)

// The same reads packed (see SelectPacked): the prepared statements run
// these, and the plain ones above only when a row does not decode.
const (
	packedStreamSQL         = SelectStreamPacked + streamForwardWhere
	packedStreamBackwardSQL = SelectStreamPacked + streamBackwardWhere
	packedAllSQL            = SelectPacked + allWhere
	packedAllTenantSQL      = SelectPacked + allTenantWhere
	packedAllBackwardSQL    = SelectPacked + allBackwardWhere
	packedAllTenantBackSQL  = SelectPacked + allTenantBackwardWhere
	packedTenantWindowSQL   = SelectPacked + tenantWindowWhere
	packedTenantWindowBack  = SelectPacked + tenantWindowBackWhere
)

type reader struct {
	db             *sql.DB
	streamForward  *sql.Stmt
	streamBackward *sql.Stmt
	all            *sql.Stmt
	allTenant      *sql.Stmt
	allBackward    *sql.Stmt
	allTenantBack  *sql.Stmt
	// tenantWindow and tenantWindowBack read a tenant's page over a
	// window of positions (see ReadAll).
	tenantWindow     *sql.Stmt
	tenantWindowBack *sql.Stmt
	streamVersion    *sql.Stmt
	// queries keeps the reads by query prepared: compiling one cost
	// more than reading its 100 events.
	queries stmtCache
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
	r.streamForward = prep(packedStreamSQL)
	r.streamBackward = prep(packedStreamBackwardSQL)
	r.all = prep(packedAllSQL)
	r.allTenant = prep(packedAllTenantSQL)
	r.allBackward = prep(packedAllBackwardSQL)
	r.allTenantBack = prep(packedAllTenantBackSQL)
	r.tenantWindow = prep(packedTenantWindowSQL)
	r.tenantWindowBack = prep(packedTenantWindowBack)
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
	for _, st := range []*sql.Stmt{r.streamForward, r.streamBackward, r.all, r.allTenant, r.allBackward, r.allTenantBack, r.tenantWindow, r.tenantWindowBack, r.streamVersion} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, r.queries.close()...)
	return errors.Join(errs...)
}

// ReadStream runs the prepared read of one stream.
func (r *reader) ReadStream(ctx context.Context, page []envelope.Event, tenant, stream string, from int64, backward bool, n int) ([]envelope.Event, error) {
	st, plain := r.streamForward, ReadStreamSQL
	if backward {
		st, plain = r.streamBackward, ReadStreamBackwardSQL
	}
	return readPacked(page, &packedScanner{known: true, tenant: tenant, stream: stream},
		func() (*sql.Rows, error) { return st.QueryContext(ctx, tenant, stream, from, n) },
		func() (*sql.Rows, error) { return r.db.QueryContext(ctx, plain, tenant, stream, from, n) })
}

// ReadAll reads a page of the log that f selects.
//
// One tenant's page walks the log itself in position order over a
// window of positions below (backward) or above from, with the tenant
// compared on each row (+tenant keeps the planner off the (tenant,
// event_id) index, which would read every event of the tenant and sort
// them): a tenant with at least n events among the window's positions
// costs the same forward and newest first, whatever the size of the
// log, and an append pays for no index of its own. When the window holds
// fewer than n of the tenant's events and does not reach the end of the
// log, the page is read again through the (tenant, event_id) index and a
// sort, as before: a tenant with few events among many others.
func (r *reader) ReadAll(ctx context.Context, page []envelope.Event, f *driver.LogFilter, from int64, n int) ([]envelope.Event, error) {
	if f.Tenant == "" || f.Query != nil {
		// Every tenant, or a read by query (the tag index finds its
		// events): no window.
		return r.readAll(ctx, page, f, from, n, 0)
	}
	head, err := Exec{}.Head(ctx, r.db)
	if err != nil {
		return page, err
	}
	if f.Backward {
		from = min(from, head)
	}
	if from < 1 || from > head {
		return page, nil // nothing there: an empty log, or past its head
	}
	w := tenantWindow(n)
	out, err := r.readAll(ctx, page, f, from, n, w)
	if err != nil || len(out) >= n {
		return out, err
	}
	if (f.Backward && from-w < 1) || (!f.Backward && from > head-w) {
		return out, nil // the window held the rest of the log
	}
	return r.readAll(ctx, out[:0], f, from, n, 0)
}

// tenantWindow is how many positions a tenant's page of n events walks
// before it reads through the tenant's index instead: enough for a
// tenant with one event in 256 of the log's.
func tenantWindow(n int) int64 { return max(4096, int64(n)*256) }

// readAll reads a page, over a window of w positions from from (w > 0)
// or through the plan SQLite picks (w == 0); a prepared statement runs
// the reads that filter by tenant at most.
func (r *reader) readAll(ctx context.Context, page []envelope.Event, f *driver.LogFilter, from int64, n int, w int64) ([]envelope.Event, error) {
	var packed func() (*sql.Rows, error)
	if f.Query != nil {
		return readPacked(page, &packedScanner{}, func() (*sql.Rows, error) {
			q, args := driver.QueryRead(false, SelectPacked, f, from, n)
			return r.queries.query(ctx, r.db, q, args...)
		}, func() (*sql.Rows, error) {
			q, args := driver.QueryRead(false, SelectEvents, f, from, n)
			return r.db.QueryContext(ctx, q, args...)
		})
	}
	switch {
	case len(f.Types) > 0, f.StreamPrefix != "", f.CorrelationID != "":
		packed = func() (*sql.Rows, error) {
			q, args := logQuery(SelectPacked, f, from, n, w)
			return r.db.QueryContext(ctx, q, args...)
		}
	case f.Tenant != "" && w > 0 && f.Backward:
		packed = func() (*sql.Rows, error) { return r.tenantWindowBack.QueryContext(ctx, from, f.Tenant, n, w) }
	case f.Tenant != "" && w > 0:
		packed = func() (*sql.Rows, error) { return r.tenantWindow.QueryContext(ctx, from, f.Tenant, n, w) }
	case f.Backward && f.Tenant != "":
		packed = func() (*sql.Rows, error) { return r.allTenantBack.QueryContext(ctx, from, f.Tenant, n) }
	case f.Backward:
		packed = func() (*sql.Rows, error) { return r.allBackward.QueryContext(ctx, from, n) }
	case f.Tenant != "":
		packed = func() (*sql.Rows, error) { return r.allTenant.QueryContext(ctx, from, f.Tenant, n) }
	default:
		packed = func() (*sql.Rows, error) { return r.all.QueryContext(ctx, from, n) }
	}
	return readPacked(page, &packedScanner{}, packed, func() (*sql.Rows, error) {
		q, args := logQuery(SelectEvents, f, from, n, w)
		return r.db.QueryContext(ctx, q, args...)
	})
}

// logQuery builds the read of the log that f selects, of the columns of
// sel (SelectEvents or SelectPacked), over a window of w positions from
// from when w > 0 (see ReadAll).
func logQuery(sel string, f *driver.LogFilter, from int64, n int, w int64) (string, []any) {
	var where []string
	var args []any
	cmp, order := "position >= ?", " ORDER BY position LIMIT ?"
	if w > 0 {
		cmp = "position >= ?1 AND position < ?1 + ?2"
	}
	if f.Backward {
		cmp, order = "position <= ?", " ORDER BY position DESC LIMIT ?"
		if w > 0 {
			cmp = "position <= ?1 AND position > ?1 - ?2"
		}
	}
	where = append(where, cmp)
	args = append(args, from)
	if w > 0 {
		args = append(args, w)
	}
	if f.Tenant != "" {
		if w > 0 {
			where = append(where, "+tenant = ?")
		} else {
			where = append(where, "tenant = ?")
		}
		args = append(args, f.Tenant)
	}
	if len(f.Types) > 0 {
		where = append(where, "type IN (?"+strings.Repeat(", ?", len(f.Types)-1)+")")
		for _, t := range f.Types {
			args = append(args, t)
		}
	}
	if f.StreamPrefix != "" {
		// substr and length count characters alike, on valid UTF-8.
		where = append(where, "substr(stream_id, 1, length(?)) = ?")
		args = append(args, f.StreamPrefix, f.StreamPrefix)
	}
	if f.CorrelationID != "" {
		where = append(where, CorrelationIDSQL+" = ?")
		args = append(args, f.CorrelationID)
	}
	args = append(args, n)
	return sel + " WHERE " + strings.Join(where, " AND ") + order, args
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

// StreamsPageSQL is sqlshared.StreamsPageSQL in SQLite's spelling.
func StreamsPageSQL(op string) string { return sqlshared.StreamsPageSQL(dialect{}, op) }
