package store

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// masterKeySize is the size of a master key and of every data key: 32
// bytes, AES-256 (erasure.MasterKeySize).
const masterKeySize = 32

// masterKeyIDSize is the size of a master key's id: the first 8 bytes of
// its SHA-256, stored beside every key it wraps.
const masterKeyIDSize = 8

// sealedVersion is the first byte of every sealed value (data or a
// wrapped key): its format, nonce then AES-256-GCM ciphertext and tag.
const sealedVersion byte = 1

// ErrMasterKey is wrapped by every error about the master key: a file that
// is not a master key, a missing one where one is needed, one that does
// not unwrap the stored keys. Permanent: fix the key given.
var ErrMasterKey = errors.New("master key")

// ErrNoMasterKey: an append carries the erasurekey extension but the store
// was opened without a master key. Nothing is stored (in clear or
// otherwise). errors.Is(err, ErrMasterKey) holds too.
var ErrNoMasterKey = fmt.Errorf("%w: none given", ErrMasterKey)

// MasterKeyError reports a data key that the master key given cannot
// unwrap: it is not the key that wrapped it (its id differs), or the
// stored key was altered. It is never reported as an erasure.
// errors.Is(err, ErrMasterKey) holds for it.
type MasterKeyError struct {
	Tenant, Subject string
	// Stored is the id of the master key that wrapped the data key, Given
	// the id of the master key given (hex).
	Stored, Given string
	// Position is the event being read, when the error is an event's
	// (0 otherwise).
	Position int64
}

// Foreign reports whether the data key was wrapped by another master key
// than the one given (rather than altered): in a store whose keys are
// wrapped by the key given, such an event is one no process of the store
// can open (an older eventlite let a second master key in).
func (e *MasterKeyError) Foreign() bool { return e.Stored != e.Given }

func (e *MasterKeyError) Error() string {
	if e.Stored == e.Given {
		return fmt.Sprintf("master key %s does not unwrap the data key of subject %q (tenant %s), though it wrapped it: the stored key was altered", e.Given, e.Subject, e.Tenant)
	}
	return fmt.Sprintf("wrong master key: the data key of subject %q (tenant %s) was wrapped by master key %s, the master key given is %s: pass the master key file that wrapped it (--master-key-file or $EVENTLITE_MASTER_KEY_FILE)", e.Subject, e.Tenant, e.Stored, e.Given)
}

// Unwrap lets errors.Is(err, ErrMasterKey) match.
func (e *MasterKeyError) Unwrap() error { return ErrMasterKey }

// StoreMasterKeyError: the store's data keys are wrapped by another
// master key than the one given. A store uses one master key: Open
// refuses a process with another one, and an append that would create a
// data key under another one is refused before anything is stored.
// errors.Is(err, ErrMasterKey) holds for it.
type StoreMasterKeyError struct {
	Stored string // the id (hex) of the master key the store's keys are wrapped by
	Given  string // the id (hex) of the master key given
}

func (e *StoreMasterKeyError) Error() string {
	return fmt.Sprintf("wrong master key: the store's data keys are wrapped by master key %s and the master key given is %s; a store uses one master key: "+
		"pass the store's master key file (--master-key-file or $EVENTLITE_MASTER_KEY_FILE)", e.Stored, e.Given)
}

// Unwrap lets errors.Is(err, ErrMasterKey) match.
func (e *StoreMasterKeyError) Unwrap() error { return ErrMasterKey }

// readMasterKeyFile reads a master key file (Options.MasterKeyFile,
// erasure.ReadMasterKeyFile): exactly 32 bytes (the raw
// key), or 64 hexadecimal digits, optionally followed by one newline
// (make one with `openssl rand -hex 32 > master.key`). Anything else is
// refused with an error matching ErrMasterKey. The key never goes into
// the database.
func readMasterKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w file %s: %w", ErrMasterKey, path, err)
	}
	k, err := parseMasterKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w file %s: %s", ErrMasterKey, path, err)
	}
	return k, nil
}

// parseMasterKey reads the forms readMasterKeyFile accepts.
func parseMasterKey(b []byte) ([]byte, error) {
	if len(b) == masterKeySize {
		return bytes.Clone(b), nil
	}
	t := bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if len(t) == 2*masterKeySize {
		k := make([]byte, masterKeySize)
		if _, err := hex.Decode(k, t); err == nil {
			return k, nil
		}
		return nil, errors.New("64 characters that are not all hexadecimal digits: want 32 raw bytes or 64 hex digits (openssl rand -hex 32)")
	}
	return nil, fmt.Errorf("%d bytes: want 32 raw bytes or 64 hex digits and an optional newline (openssl rand -hex 32)", len(b))
}

// masterKeyID is the first 8 bytes of the key's SHA-256.
func masterKeyID(k []byte) []byte {
	sum := sha256.Sum256(k)
	return sum[:masterKeyIDSize]
}

// newGCM returns AES-256-GCM under key.
func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// associatedData joins parts, each prefixed by its length, so that no two
// different lists give the same bytes.
func associatedData(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += 4 + len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

// seal encrypts plain under aead with a random nonce: the version byte,
// the nonce, then the ciphertext and its tag.
func seal(aead cipher.AEAD, plain, ad []byte) ([]byte, error) {
	ns := aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(plain)+aead.Overhead())
	out[0] = sealedVersion
	if _, err := rand.Read(out[1 : 1+ns]); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return aead.Seal(out, out[1:1+ns], plain, ad), nil
}

// open decrypts what seal produced.
func open(aead cipher.AEAD, sealed, ad []byte) ([]byte, error) {
	ns := aead.NonceSize()
	if len(sealed) < 1+ns+aead.Overhead() || sealed[0] != sealedVersion {
		return nil, errors.New("not a sealed value of a known format")
	}
	return aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], ad)
}

// dataAD is the associated data of an event's sealed data: its tenant,
// stream and id, so that sealed data moved to another event does not open.
func dataAD(tenant, stream, id string) []byte {
	return associatedData("data", tenant, stream, id)
}

// keyAD is the associated data of a wrapped data key.
func keyAD(tenant, subject string, masterID []byte) []byte {
	return associatedData("key", tenant, subject, string(masterID))
}
