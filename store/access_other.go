//go:build !unix

package store

import "os"

// Without Unix file ownership every process is treated as the owner.
func statFile(path string) (fileStat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStat{}, err
	}
	return fileStat{mode: fi.Mode().Perm()}, nil
}

func processIDs() ids { return ids{} }
