package store

import (
	"fmt"

	"github.com/eventlite/eventlite/envelope"
)

// EncryptedError: an event that must be published or applied (by the
// relay, a projection runner or a rebuild) is encrypted and the store was
// opened without the master key, so its data cannot be read. Passing it
// on without its data would lose the data downstream, silently; so they
// stop instead, having published, applied and moved nothing.
// errors.Is(err, ErrNoMasterKey) (and so ErrMasterKey) and
// errors.Is(err, envelope.ErrEncrypted) hold for it.
type EncryptedError struct {
	// Who is what refused: "relay", "projection NAME", "rebuild of NAME".
	Who                              string
	Tenant, Stream, EventID, Subject string
	Position                         int64
}

func (e *EncryptedError) Error() string {
	return fmt.Sprintf("%s: event %s at position %d (stream %q, tenant %s) is encrypted under subject %q and the store was opened without the master key: "+
		"refusing to pass it on without its data; open the store with the master key (Options.MasterKey or Options.MasterKeyFile; the CLI's --master-key-file or $EVENTLITE_MASTER_KEY_FILE)",
		e.Who, e.EventID, e.Position, e.Stream, e.Tenant, e.Subject)
}

// Unwrap lets errors.Is match ErrNoMasterKey and envelope.ErrEncrypted.
func (e *EncryptedError) Unwrap() []error { return []error{ErrNoMasterKey, envelope.ErrEncrypted} }

// RequireData returns an *EncryptedError naming who for the first of
// events read without the master key that decrypts its data
// (envelope.Encrypted), nil when every event has its data. Erased events
// (their subject was forgotten) pass: they have no data for anyone.
// The relay, projection runners and rebuilds call it on what they read
// before they publish or apply anything.
func RequireData(who string, events ...envelope.Event) error {
	for i := range events {
		if e := &events[i]; envelope.Encrypted(*e) {
			return &EncryptedError{Who: who, Tenant: e.Tenant, Stream: e.Stream, EventID: e.ID, Subject: erasureKeyOf(e), Position: e.Position}
		}
	}
	return nil
}
