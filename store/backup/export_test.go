package backup

// SetRestoreHooks sets the functions a restore calls before it opens its
// target and between its commit and its check after it, and returns a
// function that removes them.
func SetRestoreHooks(beforeLock, afterCommit func(target string)) func() {
	restoreHooks.beforeLock, restoreHooks.afterCommit = beforeLock, afterCommit
	return func() { restoreHooks.beforeLock, restoreHooks.afterCommit = nil, nil }
}
