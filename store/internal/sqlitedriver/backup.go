package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/eventlite/eventlite/internal/timecol"
	"github.com/eventlite/eventlite/store/internal/driver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// OpenFile opens a file: URI. ReadOnly opens read-write at the OS level
// with query_only set, so that SQLite removes the -wal and -shm files it
// may create when it closes, and falls back to mode=ro when the file
// cannot be opened for writing.
func (Exec) OpenFile(ctx context.Context, path string, o driver.FileOptions) (*sql.DB, *sql.Conn, error) {
	var params []string
	if o.BusyTimeout > 0 {
		params = append(params, "_pragma=busy_timeout("+fmt.Sprint(o.BusyTimeout.Milliseconds())+")")
	}
	if o.Durable {
		params = append(params, "_pragma=synchronous(FULL)")
	}
	modes := []string{""}
	if o.ReadOnly {
		modes = []string{"mode=rw", "mode=ro"}
	}
	var last error
	for _, mode := range modes {
		p := params
		if mode != "" {
			p = append([]string{mode, "_pragma=query_only(1)"}, params...)
		}
		db, err := sql.Open("sqlite", fileURI(path, p...))
		if err != nil {
			return nil, nil, err
		}
		db.SetMaxOpenConns(1)
		conn, err := db.Conn(ctx)
		if err == nil {
			return db, conn, nil
		}
		_ = db.Close()
		last = err
		var se *sqlite.Error
		if !errors.As(err, &se) || (se.Code()&0xff != sqlite3.SQLITE_CANTOPEN && se.Code()&0xff != sqlite3.SQLITE_READONLY && se.Code()&0xff != sqlite3.SQLITE_PERM) {
			break
		}
	}
	return nil, nil, last
}

// BeginFileRead runs BEGIN: SQLite's deferred transaction takes its
// snapshot at its first read, and holds it across the backup API's
// steps on the same connection.
func (Exec) BeginFileRead(ctx context.Context, conn *sql.Conn) (func(), error) {
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return func() {}, err
	}
	ended := false
	return func() {
		if !ended {
			ended = true
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}, nil
}

// PageSize reads PRAGMA page_size.
func (Exec) PageSize(ctx context.Context, q driver.ReadQuerier) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, "PRAGMA page_size").Scan(&n)
	return n, err
}

// backuper and restorer are modernc's backup API on its connection.
type backuper interface {
	NewBackup(string) (*sqlite.Backup, error)
}

type restorer interface {
	NewRestore(string) (*sqlite.Backup, error)
}

// CopyFile copies with SQLite's online backup API inside conn's read
// transaction, so the copy is the database at that snapshot.
func (x Exec) CopyFile(ctx context.Context, conn *sql.Conn, dst string, step int, progress driver.CopyProgress) error {
	pageSize, err := x.PageSize(ctx, conn)
	if err != nil {
		return err
	}
	return conn.Raw(func(dc any) error {
		bk, ok := dc.(backuper)
		if !ok {
			return fmt.Errorf("the SQLite driver has no backup API (%T)", dc)
		}
		b, err := bk.NewBackup(fileURI(dst))
		if err != nil {
			return err
		}
		for {
			more, err := stepCopy(ctx, b, step)
			if err != nil {
				return err
			}
			total := int64(b.PageCount())
			if progress != nil {
				progress(total-int64(b.Remaining()), total, pageSize)
			}
			if !more {
				break
			}
		}
		return b.Finish()
	})
}

// SealFile switches the copy to rollback-journal mode: the backup API
// copies the source's WAL flag, and a WAL database is not whole without
// its -wal file.
func (Exec) SealFile(ctx context.Context, conn *sql.Conn) error {
	var mode string
	return conn.QueryRowContext(ctx, "PRAGMA journal_mode=DELETE").Scan(&mode)
}

// CopyInto restores with the backup API run backwards (NewRestore): the
// pages of src are written into conn's database in one write
// transaction. The backup API takes an exclusive lock on a target in
// rollback-journal mode, so that no other connection could read it
// under the lock: the target is switched to WAL first (where readers go
// on while the copy holds the write lock, and the copy keeps the mode).
// SQLite cannot change the page size of a database in WAL mode: an empty
// new file takes the source's before the switch.
func (Exec) CopyInto(ctx context.Context, conn *sql.Conn, src string, srcPageSize int64, step int,
	locked func() error, progress driver.CopyProgress) error {
	var mode string
	var pageSize, pages int64
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return err
	}
	if pages > 0 && pageSize != srcPageSize {
		return &driver.PageSizeError{Target: pageSize, Source: srcPageSize}
	}
	if !strings.EqualFold(mode, "wal") {
		if pages == 0 {
			if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", srcPageSize)); err != nil {
				return err
			}
		}
		if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
			if Classify(err) == driver.Busy {
				return &driver.LockedError{Err: err}
			}
			return err
		}
		if !strings.EqualFold(mode, "wal") {
			return fmt.Errorf("switch the target to WAL: journal mode is %q", mode)
		}
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return err
	}
	if pageSize != srcPageSize {
		return &driver.PageSizeError{Target: pageSize, Source: srcPageSize}
	}
	return conn.Raw(func(dc any) error {
		r, ok := dc.(restorer)
		if !ok {
			return fmt.Errorf("the SQLite driver has no backup API (%T)", dc)
		}
		b, err := r.NewRestore(fileURI(src))
		if err != nil {
			return err
		}
		// Step 0 copies nothing: it takes the target's write lock, which
		// the backup holds until the copy commits or Finish rolls it back.
		if _, err := b.Step(0); err != nil {
			_ = b.Finish()
			if Classify(err) == driver.Busy {
				return &driver.LockedError{Err: err}
			}
			return err
		}
		// Nothing is copied yet; the backup starts over at its next step
		// when its source changed, so it copies what locked wrote too.
		if err := locked(); err != nil {
			_ = b.Finish()
			return err
		}
		total := int64(0)
		for {
			more, err := stepCopy(ctx, b, step)
			if err != nil {
				return err
			}
			if n := int64(b.PageCount()); n > 0 {
				total = n
			}
			done := total - int64(b.Remaining())
			if !more {
				done = total
			}
			if progress != nil {
				progress(done, total, srcPageSize)
			}
			if !more {
				break
			}
		}
		return b.Finish()
	})
}

// stepCopy copies up to n more pages. On a cancel or an error it
// finishes b, which for a restore rolls the target back, and returns
// the error.
func stepCopy(ctx context.Context, b *sqlite.Backup, n int) (bool, error) {
	if err := ctx.Err(); err != nil {
		_ = b.Finish()
		return false, err
	}
	more, err := b.Step(int32(n))
	if err != nil {
		_ = b.Finish()
		return false, err
	}
	return more, nil
}

// RaiseSequence raises the position floor, or in a file older than
// schema 14 (which has none) the events table's AUTOINCREMENT sequence,
// which the migration to 14 turns into the floor.
func (x Exec) RaiseSequence(ctx context.Context, q driver.Querier, floor int64) error {
	hasFloor, err := x.TableExists(ctx, q, "position_floor")
	if err != nil {
		return err
	}
	if hasFloor {
		_, err = q.ExecContext(ctx, `UPDATE position_floor SET position = max(position, ?1)`, floor)
	} else {
		_, err = q.ExecContext(ctx, `UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'events';
		INSERT INTO sqlite_sequence (name, seq) SELECT 'events', ?1 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'events')`, floor)
	}
	return err
}

// RecordRestoreHole upserts into position_holes (migration 0005).
func (x Exec) RecordRestoreHole(ctx context.Context, q driver.Querier, from, to int64, detectedBy string, now int64) error {
	holes, err := x.TableExists(ctx, q, "position_holes")
	if err != nil || !holes {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO position_holes (from_position, to_position, detected_by, detected_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (from_position) DO UPDATE SET to_position = max(to_position, excluded.to_position), detected_by = excluded.detected_by`,
		from, to, detectedBy, now)
	return err
}

// HolesDetectedBy reads position_holes.
func (Exec) HolesDetectedBy(ctx context.Context, q driver.ReadQuerier, detectedBy string) ([]driver.FileHole, error) {
	return driver.ReadHoles(ctx, q, `SELECT from_position, to_position FROM position_holes WHERE detected_by = ?`, detectedBy)
}

// fileURI builds a file: URI for path with the given query parameters: a
// plain file name would ignore them.
func fileURI(path string, params ...string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))
	if len(params) == 0 {
		return "file:" + p
	}
	return "file:" + p + "?" + strings.Join(params, "&")
}

// EventsUpTo counts the events at positions up to position.
func (Exec) EventsUpTo(ctx context.Context, q driver.ReadQuerier, position int64) (count, highest int64, err error) {
	err = q.QueryRowContext(ctx, `SELECT count(*), COALESCE(max(position), 0) FROM events WHERE position <= ?`, position).Scan(&count, &highest)
	return count, highest, err
}

// RolledBackStreams attaches replaced to conn and compares, per stream,
// the newest version each file ever handed out: its newest event's, or
// the top of a gap a restore recorded there, whichever is higher (a
// stream hard-deleted in a copy keeps the versions it lost only as such
// a gap, with no event above it). Only a copy with the version_gaps
// table (migration 0018) records gaps: an older one lists none.
func (x Exec) RolledBackStreams(ctx context.Context, conn *sql.Conn, replaced string) (out []driver.RolledBackStream, err error) {
	gaps, err := x.TableExists(ctx, conn, "version_gaps")
	if err != nil || !gaps {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS replaced`, fileURI(replaced)); err != nil {
		return nil, err
	}
	defer func() {
		if _, derr := conn.ExecContext(context.Background(), `DETACH DATABASE replaced`); err == nil {
			err = derr
		}
	}()
	var hasEvents, hasGaps int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM replaced.sqlite_schema WHERE type = 'table' AND name = 'events'`).Scan(&hasEvents); err != nil || hasEvents == 0 {
		return nil, err
	}
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM replaced.sqlite_schema WHERE type = 'table' AND name = 'version_gaps'`).Scan(&hasGaps); err != nil {
		return nil, err
	}
	// The replaced file's newest version per stream comes from its
	// (tenant, stream_id, version) index and its recorded gaps; the
	// copy's is one index lookup and one gap lookup per stream.
	had := `SELECT tenant, stream_id, MAX(version) AS v FROM replaced.events GROUP BY tenant, stream_id`
	if hasGaps > 0 {
		had += ` UNION ALL SELECT tenant, stream_id, MAX(to_version) FROM replaced.version_gaps GROUP BY tenant, stream_id`
	}
	have := `max(COALESCE((SELECT MAX(e.version) FROM main.events e WHERE e.tenant = o.tenant AND e.stream_id = o.stream_id), 0),
		COALESCE((SELECT MAX(g.to_version) FROM main.version_gaps g WHERE g.tenant = o.tenant AND g.stream_id = o.stream_id), 0))`
	rows, err := conn.QueryContext(ctx, `SELECT o.tenant, o.stream_id, o.had, `+have+`, s.deleted
		FROM (SELECT tenant, stream_id, MAX(v) AS had FROM (`+had+`) GROUP BY tenant, stream_id) o
		LEFT JOIN main.streams s ON s.tenant = o.tenant AND s.stream_id = o.stream_id
		WHERE o.had > `+have+`
		ORDER BY o.tenant, o.stream_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r driver.RolledBackStream
		var deleted sql.NullInt64
		if err := rows.Scan(&r.Tenant, &r.Stream, &r.Had, &r.Have, &deleted); err != nil {
			return nil, err
		}
		r.Exists = deleted.Valid
		// Hard-deleted in the copy: never written again there, but a
		// later restore of an older file in which it lives must still
		// see the versions the replaced file handed out.
		r.HardDeleted = deleted.Valid && deleted.Int64 == 2
		out = append(out, r)
	}
	return out, rows.Err()
}

// RecordVersionGap writes the gap, the stream's row when the copy has
// none (its reads start at the restored event), and the event, in the
// events layout of migration 0016 (attrs NULL: the event has none). A
// stream hard-deleted in the copy gets the gap alone.
func (Exec) RecordVersionGap(ctx context.Context, q driver.Querier, r driver.RolledBackStream, ev driver.RestoredEvent, detectedBy string, now int64) error {
	if _, err := q.ExecContext(ctx, `INSERT INTO version_gaps (tenant, stream_id, from_version, to_version, detected_by, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?)`, r.Tenant, r.Stream, r.Have+1, r.Had, detectedBy, now); err != nil {
		return err
	}
	if r.HardDeleted {
		return nil
	}
	if !r.Exists {
		if _, err := q.ExecContext(ctx, `INSERT INTO streams (tenant, stream_id, created_at, first_version) VALUES (?, ?, ?, ?)`,
			r.Tenant, r.Stream, now, r.Had+1); err != nil {
			return err
		}
	}
	_, err := q.ExecContext(ctx, `INSERT INTO events (position, tenant, stream_id, version, event_id, type, source, time, content_type, attrs, recorded_at, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
		ev.Position, r.Tenant, r.Stream, r.Had+1, ev.ID, ev.Type, ev.Source, timecol.Value(ev.Time), ev.ContentType, now, ev.Data)
	return err
}

// TakeLeases runs BEGIN IMMEDIATE on conn, reads the held leases'
// latest expiry and gives them to owner with the next token.
func (x Exec) TakeLeases(ctx context.Context, conn *sql.Conn, owner string, ttlMs int64) (heldUntil, now int64, err error) {
	has, err := x.TableExists(ctx, conn, "leases")
	if err != nil || !has {
		return 0, 0, err
	}
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return 0, 0, err
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.Background(), `ROLLBACK`)
		}
	}()
	var until sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT MAX(expires_at), `+nowMillis+` FROM leases WHERE owner <> '' AND expires_at > `+nowMillis).Scan(&until, &now); err != nil {
		return 0, 0, err
	}
	if !until.Valid {
		_, err = conn.ExecContext(ctx, `ROLLBACK`)
		return 0, 0, err
	}
	if _, err := conn.ExecContext(ctx, `UPDATE leases SET owner = ?1, token = token + 1, expires_at = ?2 + ?3, acquired_at = ?2
		WHERE owner <> '' AND expires_at > ?2`, owner, now, ttlMs); err != nil {
		return 0, 0, err
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return 0, 0, err
	}
	return until.Int64, now, nil
}

// ReleaseLeases frees owner's leases.
func (x Exec) ReleaseLeases(ctx context.Context, conn *sql.Conn, owner string) error {
	has, err := x.TableExists(ctx, conn, "leases")
	if err != nil || !has {
		return err
	}
	_, err = conn.ExecContext(ctx, `UPDATE leases SET owner = '', expires_at = 0 WHERE owner = ?`, owner)
	return err
}

// FenceLeases attaches replaced and raises the copy's lease tokens above
// both files', every lease free; a lease only replaced has is copied,
// free, with its next token.
func (x Exec) FenceLeases(ctx context.Context, conn *sql.Conn, replaced string) error {
	has, err := x.TableExists(ctx, conn, "leases")
	if err != nil || !has {
		return err
	}
	return withReplaced(ctx, conn, replaced, "leases", func(old bool) error {
		return fenceLeases(ctx, conn, old)
	})
}

// fenceLeases is FenceLeases with replaced attached; old says whether
// it has a leases table.
func fenceLeases(ctx context.Context, conn *sql.Conn, old bool) error {
	replacedMax := `0`
	if old {
		replacedMax = `COALESCE((SELECT r.token FROM replaced.leases r WHERE r.resource = main.leases.resource), 0)`
		if _, err := conn.ExecContext(ctx, `INSERT INTO main.leases (resource, owner, token, expires_at, acquired_at)
			SELECT r.resource, '', r.token + 1, 0, 0 FROM replaced.leases r
			WHERE NOT EXISTS (SELECT 1 FROM main.leases m WHERE m.resource = r.resource)`); err != nil {
			return err
		}
	}
	_, err := conn.ExecContext(ctx, `UPDATE main.leases SET owner = '', expires_at = 0, token = max(token, `+replacedMax+`) + 1`)
	return err
}

// withReplaced attaches the database file replaced to conn as
// "replaced", calls fn with whether it has table, and detaches it.
func withReplaced(ctx context.Context, conn *sql.Conn, replaced, table string, fn func(has bool) error) (err error) {
	if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS replaced`, fileURI(replaced)); err != nil {
		return err
	}
	defer func() {
		if _, derr := conn.ExecContext(context.Background(), `DETACH DATABASE replaced`); err == nil {
			err = derr
		}
	}()
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM replaced.sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil {
		return err
	}
	return fn(n > 0)
}

// RaiseStatsGeneration attaches replaced and sets the copy's stats
// generation (migration 0021) to one above both files'.
func (x Exec) RaiseStatsGeneration(ctx context.Context, conn *sql.Conn, replaced string) error {
	has, err := x.TableExists(ctx, conn, "stats_generation")
	if err != nil || !has {
		return err
	}
	return withReplaced(ctx, conn, replaced, "stats_generation", func(old bool) error {
		replacedGen := `0`
		if old {
			replacedGen = `COALESCE((SELECT generation FROM replaced.stats_generation), 0)`
		}
		_, err := conn.ExecContext(ctx, `UPDATE main.stats_generation SET generation = max(generation, `+replacedGen+`) + 1`)
		return err
	})
}

// VersionGapsDetectedBy reads version_gaps (migration 0018).
func (x Exec) VersionGapsDetectedBy(ctx context.Context, q driver.ReadQuerier, detectedBy string) ([]driver.RolledBackStream, error) {
	has, err := x.TableExists(ctx, q, "version_gaps")
	if err != nil || !has {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT tenant, stream_id, from_version - 1, to_version FROM version_gaps WHERE detected_by = ? ORDER BY tenant, stream_id, from_version`, detectedBy)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.RolledBackStream
	for rows.Next() {
		var r driver.RolledBackStream
		if err := rows.Scan(&r.Tenant, &r.Stream, &r.Have, &r.Had); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
