package backup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// ErrUnforget: a restore or a copy would bring back subjects that were
// forgotten (their keys destroyed, or tombstones kept) since its source
// was taken: the source still holds their keys, so their data would
// decrypt again. Nothing was changed. Pass ReapplyForgets (the CLI's
// --reapply-forgets) to forget them again in what is restored or
// copied.
var ErrUnforget = errors.New("the restore or copy would bring forgotten subjects back")

// ForgottenSubject names a subject forgotten in a tenant.
type ForgottenSubject struct {
	Tenant, Subject string
}

// UnforgetError lists the subjects a restore or a copy would bring back:
// forgotten in the database replaced (a restore) or in
// CopyOptions.ForgetsFrom (a copy), not in the source. errors.Is(err,
// ErrUnforget) holds for it.
type UnforgetError struct {
	Op       string // "restore" or "copy"
	Source   string // the file restored or copied from
	Subjects []ForgottenSubject
}

func (e *UnforgetError) Error() string {
	names := make([]string, 0, min(len(e.Subjects), 5))
	for i, s := range e.Subjects {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(e.Subjects)-5))
			break
		}
		names = append(names, fmt.Sprintf("%q (tenant %s)", s.Subject, s.Tenant))
	}
	flag := "--reapply-forgets (RestoreOptions.ReapplyForgets)"
	if e.Op == "copy" {
		flag = "--reapply-forgets (CopyOptions.ReapplyForgets)"
	}
	return fmt.Sprintf("%v: %s from %s would bring back %d subject(s) forgotten since it was taken: %s; their data would decrypt again. Nothing was changed: "+
		"run it again with %s to forget them again in what it writes", ErrUnforget, e.Op, e.Source, len(e.Subjects), strings.Join(names, ", "), flag)
}

// Unwrap lets errors.Is(err, ErrUnforget) match.
func (e *UnforgetError) Unwrap() error { return ErrUnforget }

// unforgotten returns those of forgotten that q (read with ex) does not
// hold as forgotten: a live key, or no row at all (no tombstone). A
// database without the erasure_keys table holds none of them.
func unforgotten(ctx context.Context, ex driver.Executor, q driver.ReadQuerier, forgotten []driver.ForgottenKey) ([]driver.ForgottenKey, error) {
	if len(forgotten) == 0 {
		return nil, nil
	}
	ok, err := ex.TableExists(ctx, q, "erasure_keys")
	if err != nil {
		return nil, mapErr(err)
	}
	if !ok {
		return forgotten, nil
	}
	var out []driver.ForgottenKey
	for _, f := range forgotten {
		row, found, err := ex.DataKey(ctx, q, f.Tenant, f.Subject)
		if err != nil {
			return nil, fmt.Errorf("read data key of subject %q (tenant %s): %w", f.Subject, f.Tenant, mapErr(err))
		}
		if !found || !row.Forgotten {
			out = append(out, f)
		}
	}
	return out, nil
}

// reapplyForgets forgets again, in q (a write transaction), each of
// keys as Forget did: it destroys the key (or keeps a tombstone) with
// the time of the original forget, drops the snapshots of the subject's
// streams, removes the data and tags from the copies of its events, the
// tags from its events and their index, and the error texts of its
// outbox rows, then removes the ciphertext of every
// forgotten subject's events. The caller appends an
// eventlite.subject.forgotten event per subject once the copy committed
// (announceForgets): the original ones were in the log the source lacks.
func reapplyForgets(ctx context.Context, ex driver.Executor, q driver.Querier, keys []driver.ForgottenKey) error {
	if len(keys) == 0 {
		return nil
	}
	for _, t := range []string{"erasure_keys", "erasure_streams"} {
		ok, err := ex.TableExists(ctx, q, t)
		if err != nil {
			return mapErr(err)
		}
		if !ok {
			return fmt.Errorf("%w: the source's schema is older than erasure's record of subjects (no table %s), so the forgets cannot be applied to it: "+
				"restore it into a new file first (eventlite restore --db NEW SRC), migrate that (eventlite migrate --db NEW), then restore or copy NEW", store.ErrUnsupported, t)
		}
	}
	for _, k := range keys {
		if _, _, err := ex.ForgetDataKey(ctx, q, k.Tenant, k.Subject, k.At); err != nil {
			return fmt.Errorf("forget subject %q (tenant %s) again: %w", k.Subject, k.Tenant, mapErr(err))
		}
		streams, err := ex.SubjectStreams(ctx, q, k.Tenant, k.Subject)
		if err != nil {
			return fmt.Errorf("find the streams of subject %q (tenant %s): %w", k.Subject, k.Tenant, mapErr(err))
		}
		for _, st := range streams {
			if err := ex.DropSubjectSnapshots(ctx, q, k.Tenant, st); err != nil {
				return fmt.Errorf("drop snapshots of %q: %w", st, mapErr(err))
			}
		}
		for _, kind := range driver.EventCopyKinds {
			if _, err := ex.EraseCopies(ctx, q, kind, k.Tenant, k.Subject); err != nil {
				return fmt.Errorf("erase copies in %s: %w", kind, mapErr(err))
			}
		}
		// The tags of the subject's events go with their data, as in
		// Forget: the source still carries them and their index rows.
		if _, err := ex.EraseSubjectTags(ctx, q, k.Tenant, k.Subject); err != nil {
			return fmt.Errorf("erase the tags of subject %q (tenant %s): %w", k.Subject, k.Tenant, mapErr(err))
		}
		if _, err := ex.EraseOutboxErrors(ctx, q, k.Tenant, k.Subject); err != nil {
			return fmt.Errorf("erase the outbox's error texts: %w", mapErr(err))
		}
	}
	if _, err := ex.ScrubErased(ctx, q); err != nil {
		return fmt.Errorf("remove erased ciphertext: %w", mapErr(err))
	}
	return nil
}

// subjectsOf is keys as ForgottenSubjects.
func subjectsOf(keys []driver.ForgottenKey) []ForgottenSubject {
	if len(keys) == 0 {
		return nil
	}
	out := make([]ForgottenSubject, len(keys))
	for i, k := range keys {
		out[i] = ForgottenSubject{Tenant: k.Tenant, Subject: k.Subject}
	}
	return out
}

// forgottenInFile lists the forgotten subjects of the database file at
// path (none when it has no erasure_keys table), on a read connection of
// its own: a restore reads its target under the target's write lock.
func forgottenInFile(ctx context.Context, path string, o RestoreOptions) ([]driver.ForgottenKey, error) {
	db, conn, err := openSource(ctx, path, o.BusyTimeout)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	defer conn.Close()
	ok, err := files.TableExists(ctx, conn, "erasure_keys")
	if err != nil || !ok {
		return nil, mapErr(err)
	}
	keys, err := files.ForgottenSubjects(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("restore: read the target's forgotten subjects: %w", mapErr(err))
	}
	return keys, nil
}

// reforgetCopy compares the copy at tmp, which a restore is about to
// copy in, with the target's forgotten subjects: the ones it would bring
// back are an *UnforgetError unless o.ReapplyForgets, which forgets them
// again in the copy (secure_delete on, so the freed pages hold nothing
// of them) and returns them.
func reforgetCopy(ctx context.Context, tmp, src string, forgotten []driver.ForgottenKey, o RestoreOptions) ([]ForgottenSubject, error) {
	if len(forgotten) == 0 {
		return nil, nil
	}
	db, conn, err := files.OpenFile(ctx, tmp, driver.FileOptions{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	defer conn.Close()
	back, err := unforgotten(ctx, files, conn, forgotten)
	if err != nil {
		return nil, fmt.Errorf("restore: compare the backup's keys with the forgotten subjects: %w", err)
	}
	if len(back) == 0 {
		return nil, nil
	}
	if !o.ReapplyForgets {
		return nil, &UnforgetError{Op: "restore", Source: src, Subjects: subjectsOf(back)}
	}
	if err := files.SetSecureDelete(ctx, conn, true); err != nil {
		return nil, mapErr(err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, mapErr(err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := reapplyForgets(ctx, files, tx, back); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, mapErr(err)
	}
	return subjectsOf(back), nil
}

// announceForgets appends, in s, one eventlite.subject.forgotten event
// per subject forgotten again by a restore or a copy: the source's log
// lacks the original ones, and read models in the file, replayed or
// caught up from it, purge the subject on this event.
func announceForgets(ctx context.Context, s *store.Store, subjects []ForgottenSubject) error {
	in := store.Inner(inside.Key{}, s)
	for _, f := range subjects {
		if err := in.AnnounceForgotten(ctx, f.Tenant, f.Subject); err != nil {
			return err
		}
	}
	return nil
}

// announceRestoredForgets opens the restored target and announces the
// subjects the restore forgot again (announceForgets).
func announceRestoredForgets(ctx context.Context, target string, subjects []ForgottenSubject, o RestoreOptions) error {
	if len(subjects) == 0 {
		return nil
	}
	s, err := store.Open(ctx, target, &store.Options{BusyTimeout: o.BusyTimeout})
	if err != nil {
		return err
	}
	err = announceForgets(ctx, s, subjects)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}
