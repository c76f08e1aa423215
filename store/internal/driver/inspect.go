package driver

// FileHeader is a database file's identity (Files.FileHeader).
type FileHeader struct {
	SchemaVersion int
	ApplicationID int32
}
