package aggregate

import "github.com/eventlite/eventlite/internal/command"

// InputHash is the hash of a command's input that the operation ledger
// compares: the stream, the payload's Go type and its canonical JSON
// (encoding/json output: struct fields in declaration order, map keys
// sorted), leaving out top-level struct fields tagged `idem:"-"`.
func InputHash(stream string, payload any) (string, error) {
	return command.InputHash(stream, payload)
}
