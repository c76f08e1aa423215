// Package erasure forgets a subject's personal data in an event store by
// crypto-shredding: the data of an event appended with the erasurekey
// extension is encrypted with its subject's own data key, and forgetting
// the subject destroys the key.
//
// The store seals and opens the data (store.Options.MasterKey or
// MasterKeyFile, read as ReadMasterKeyFile reads it); this package is
// what an application or an operator calls: For(s).Forget destroys a
// subject's key in a tenant, For(s).Scrub removes the ciphertext no key
// opens any more.
//
//	s, err := store.Open(ctx, "app.db", &store.Options{MasterKeyFile: "master.key"})
//	...
//	_, err = s.Append(ctx, "default", "user-42", store.NoStream, ev.WithErasureKey("alice"))
//	res, err := erasure.For(s).Forget(ctx, "default", "alice")
//	_, err = erasure.For(s).Scrub(ctx)
//
// Guarantees: an event carrying erasurekey is never stored with its data
// in clear; after Forget its data is unreadable by anyone, its attributes
// stay and it reads as dataerased; a wrong master key is an error
// (store.MasterKeyError), never an erasure; after Scrub neither its
// plaintext, its ciphertext nor its wrapped key is in the file or its
// WAL. The errors about the master key (store.ErrMasterKey,
// store.ErrNoMasterKey, *store.MasterKeyError, *store.StoreMasterKeyError)
// are store's: store.Open, appends and reads return them.
package erasure
