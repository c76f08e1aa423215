package erasure

import (
	"github.com/eventlite/eventlite/internal/inside"
	"github.com/eventlite/eventlite/store"
)

// MasterKeySize is the size of a master key (store.Options.MasterKey) and
// of every data key: 32 bytes, AES-256. store.Open refuses a key of
// another size with an error matching store.ErrMasterKey.
const MasterKeySize = 32

// ReadMasterKeyFile reads a master key file, as store.Open reads
// store.Options.MasterKeyFile: exactly 32 bytes (the raw key), or 64
// hexadecimal digits, optionally followed by one newline (make one with
// `openssl rand -hex 32 > master.key`). Anything else is refused with an
// error matching store.ErrMasterKey. The key never goes into the
// database.
func ReadMasterKeyFile(path string) ([]byte, error) {
	return store.Inner(inside.Key{}, nil).ReadMasterKeyFile(path)
}
