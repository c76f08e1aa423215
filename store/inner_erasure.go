package store

import (
	"context"
	"fmt"
)

// What package store/erasure (the public face of erasure: forget, scrub,
// master keys) needs of a Store. The mechanism (sealing data on append,
// opening it on read, the keyring) stays in store.

// Forget forgets subject in tenant: see erasure.Eraser.Forget. Its
// result's fields are erasure.ForgetResult's.
func (in inner) Forget(ctx context.Context, tenant, subject string) (forgetResult, error) {
	return in.s.forget(ctx, tenant, subject)
}

// Scrub removes the forgotten subjects' ciphertext and checkpoints the
// WAL: see erasure.Eraser.Scrub.
func (in inner) Scrub(ctx context.Context) (events int64, checkpointed bool, err error) {
	return in.s.scrub(ctx)
}

// HasMasterKey reports whether the store was opened with a master key.
func (in inner) HasMasterKey() bool { return in.s.keys.master != nil }

// Encrypted reports whether the store holds data keys that are not
// forgotten: see erasure.Eraser.Encrypted.
func (in inner) Encrypted(ctx context.Context) (bool, error) {
	ok, err := in.s.ex.AnyLiveKey(ctx, in.s.rdb)
	if err != nil {
		return false, fmt.Errorf("read data keys: %w", mapErr(err))
	}
	return ok, nil
}

// ReadMasterKeyFile reads a master key file as Options.MasterKeyFile
// does: see erasure.ReadMasterKeyFile. It needs no store (Inner may be
// given nil).
func (inner) ReadMasterKeyFile(path string) ([]byte, error) { return readMasterKeyFile(path) }
