package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// ErrNotOwner: the database file belongs to another OS user, and opening
// it as this user would create SQLite's -wal and -shm files that the
// owner could not write, locking the owner out. *SharingError says what
// sharing needs. Permanent until the files' owners or modes change.
var ErrNotOwner = errors.New("database file belongs to another user")

// SharingError refuses to open another user's database file in a way that
// would lock its owner out. errors.Is(err, ErrNotOwner) holds for it.
type SharingError struct {
	Path  string
	Owner int  // the file's owner (uid)
	User  int  // the effective uid of this process
	Write bool // the open was to write, not ReadOnly
}

func (e *SharingError) Error() string {
	what := fmt.Sprintf("no process has it open, and reading it as uid %d would create %s-wal and %s-shm that uid %d could not write, locking it out",
		e.User, e.Path, e.Path, e.Owner)
	if e.Write {
		what = fmt.Sprintf("writing it as uid %d would use or create %s-wal and %s-shm that one of the two users could not write", e.User, e.Path, e.Path)
	}
	return fmt.Sprintf("%v: %s belongs to uid %d; %s. Use it as uid %d, or share it: give the owner and the other users a group "+
		"that owns the file and its directory, with write permission (chgrp GROUP FILE DIR; chmod g+w FILE; chmod g+ws DIR)",
		ErrNotOwner, e.Path, e.Owner, what, e.Owner)
}

// Unwrap lets errors.Is(err, ErrNotOwner) match.
func (e *SharingError) Unwrap() error { return ErrNotOwner }

// accessPlan is how this process may open an existing database file
// without locking out its owner.
type accessPlan int

const (
	// planOwner: this process owns the file, or is root (SQLite gives the
	// files it creates the database file's owner): open it as usual.
	planOwner accessPlan = iota
	// planShared: another user's file, but the -wal and -shm this
	// process would create get the file's group and mode, which let the
	// owner write them: open it as usual.
	planShared
	// planAttach: another user's file that a process has open (its -wal
	// and -shm exist): read it read-only (mode=ro); SQLite creates no file.
	planAttach
	// planRefuse: any open would leave files the owner cannot write.
	planRefuse
)

// ids are a process's effective user and groups.
type ids struct {
	uid, gid int
	groups   []int // supplementary groups
}

func (u ids) inGroup(gid int) bool { return u.gid == gid || slices.Contains(u.groups, gid) }

// fileStat is what the decision needs of a file or directory.
type fileStat struct {
	uid, gid int
	mode     fs.FileMode // permission bits plus ModeSetgid
}

// canWrite reports whether u may write a file or directory with st.
func (u ids) canWrite(st fileStat) bool {
	switch {
	case u.uid == 0:
		return true
	case u.uid == st.uid:
		return st.mode&0o200 != 0
	case u.inGroup(st.gid):
		return st.mode&0o020 != 0
	}
	return st.mode&0o002 != 0
}

// planAccess decides how u may open the database file db in directory
// dir, given whether its -wal and -shm files exist. readOnly is whether
// the store only reads. SQLite creates -wal and -shm with the database
// file's permission bits, owned by the creating user (root hands them to
// the database's owner) and by its group, or the directory's when the
// directory is setgid; once its last connection closes, a process that may
// write the database checkpoints and removes them.
func planAccess(u ids, db, dir fileStat, walExists, shmExists, readOnly bool) accessPlan {
	if u.uid == 0 || u.uid == db.uid {
		return planOwner
	}
	newGID := u.gid
	if dir.mode&fs.ModeSetgid != 0 {
		newGID = dir.gid
	}
	ownerCanWrite := db.mode&0o002 != 0 || (newGID == db.gid && db.mode&0o020 != 0)
	if ownerCanWrite && u.canWrite(dir) && u.canWrite(db) {
		return planShared
	}
	if readOnly && walExists && shmExists {
		return planAttach
	}
	return planRefuse
}

// checkAccess stats path and decides how to open it (planAccess); a
// missing file is planOwner: this process creates it. For planRefuse it
// returns a *SharingError.
func checkAccess(path string, readOnly bool) (accessPlan, error) {
	db, err := statFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return planOwner, nil
	}
	if err != nil {
		return planRefuse, fmt.Errorf("store: %w", err)
	}
	u := processIDs()
	if u.uid == 0 || u.uid == db.uid {
		return planOwner, nil
	}
	dir, err := statFile(filepath.Dir(path))
	if err != nil {
		return planRefuse, fmt.Errorf("store: %w", err)
	}
	plan := planAccess(u, db, dir, exists(path+"-wal"), exists(path+"-shm"), readOnly)
	if plan == planRefuse {
		return plan, &SharingError{Path: path, Owner: db.uid, User: u.uid, Write: !readOnly}
	}
	return plan, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// createdByMe reports whether this process's user owns path, which then
// it created (checkAccess found the file owned by another user).
func createdByMe(path string) bool {
	st, err := statFile(path)
	return err == nil && st.uid == processIDs().uid
}
