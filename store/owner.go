package store

import (
	"os"
	"strconv"
	"strings"
)

// OwnerGone reports whether a lease owner named in the default form
// host:pid:suffix (the form runners and relays use unless told otherwise)
// is a process on this host that no longer runs. Any other owner, one on
// another host, or a process that may still run reports false: only a
// process known to be gone counts.
func OwnerGone(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) < 3 {
		return false
	}
	host := strings.Join(parts[:len(parts)-2], ":")
	pid, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || pid <= 0 {
		return false
	}
	if me, err := os.Hostname(); err != nil || me != host {
		return false
	}
	if pid == os.Getpid() {
		return false
	}
	return processGone(pid)
}
