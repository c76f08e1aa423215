package driver

import "context"

// Inspect reads and stamps a database's identity: its schema version and
// the number that tells tools what wrote it.
type Inspect interface {
	// FileHeader reads the schema version (0 for a database eventlite
	// never opened) and application id of the database file at path
	// without creating, migrating or otherwise changing it. A server
	// engine answers ErrUnsupported.
	FileHeader(ctx context.Context, path string) (FileHeader, error)
	// SetApplicationID stamps the database's application id; it
	// commits with the transaction q is in.
	SetApplicationID(ctx context.Context, q Querier, id int32) error
}

// FileHeader is a database file's identity.
type FileHeader struct {
	SchemaVersion int
	ApplicationID int32
}
