package envelope

import (
	"errors"
	"maps"
)

// The extensions of erasure by crypto-shredding (see the store's
// Erasure). ExtErasureKey is set by whoever appends; the store sets the
// other two on the events it reads.
const (
	// ExtErasureKey names the subject (a person, an account) whose data
	// key encrypts the event's data in the store. Its value is a string.
	ExtErasureKey = "erasurekey"
	// ExtDataErased is true on an event whose subject was forgotten: its
	// attributes are intact and it has no data.
	ExtDataErased = "dataerased"
	// ExtDataEncrypted is true on an encrypted event read without the
	// master key: it has no data.
	ExtDataEncrypted = "dataencrypted"
)

// ErrErased: the event's data was erased (its subject was forgotten), so
// there is nothing to decode. Registry.Decode returns it for such events.
// Permanent, and expected: handle it, do not quarantine the event.
var ErrErased = errors.New("event data erased: its subject was forgotten")

// ErrEncrypted: the event's data is encrypted and was read without the
// master key, so there is nothing to decode. Registry.Decode returns it.
var ErrEncrypted = errors.New("event data encrypted: read it with the master key")

// Erased reports whether e's data was erased (extension dataerased:
// true).
func Erased(e Event) bool {
	v, _ := e.Extensions[ExtDataErased].(bool)
	return v
}

// Encrypted reports whether e was read without the master key that
// decrypts its data (extension dataencrypted: true).
func Encrypted(e Event) bool {
	v, _ := e.Extensions[ExtDataEncrypted].(bool)
	return v
}

// WithErasureKey returns e with the erasurekey extension set to subject:
// the store encrypts its data with subject's data key, and forgetting the
// subject erases it. e's extensions are copied, not changed.
func (e Event) WithErasureKey(subject string) Event {
	ext := maps.Clone(e.Extensions)
	if ext == nil {
		ext = make(map[string]any, 1)
	}
	ext[ExtErasureKey] = subject
	e.Extensions = ext
	return e
}
