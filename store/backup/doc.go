// Package backup copies an eventlite store whole: Create backs up a
// SQLite file while writers go on appending, Restore puts a backup back
// in place of a live file without losing a position or a version it
// handed out, Copy moves a SQLite file's store into PostgreSQL, and
// Inspect reads a file's schema version without opening it as a store.
//
// Create, Restore and Inspect work on SQLite files (a PostgreSQL
// address is *FileOnlyError): a database on a server is backed up with
// the server's own tools. Each checks before it changes anything: a
// backup is verified before it is renamed into place, a restore's source
// before the target is touched, a copy read back in its own transaction
// before it commits. Neither a restore nor a copy brings back a subject
// forgotten since its source was taken (ErrUnforget, or
// RestoreOptions.ReapplyForgets / CopyOptions.ReapplyForgets to forget it
// again). docs/backup.md is the operator's guide.
package backup
