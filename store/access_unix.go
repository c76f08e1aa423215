//go:build unix

package store

import (
	"io/fs"
	"os"
	"syscall"
)

func statFile(path string) (fileStat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStat{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{uid: os.Geteuid(), gid: os.Getegid(), mode: fi.Mode() & (fs.ModePerm | fs.ModeSetgid)}, nil
	}
	return fileStat{uid: int(st.Uid), gid: int(st.Gid), mode: fi.Mode() & (fs.ModePerm | fs.ModeSetgid)}, nil
}

func processIDs() ids {
	groups, _ := os.Getgroups()
	return ids{uid: os.Geteuid(), gid: os.Getegid(), groups: groups}
}
