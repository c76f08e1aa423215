package erasure_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
)

// Forget destroys a subject's data key: its events keep their attributes
// and read without data, marked dataerased. Scrub then removes their
// ciphertext from the file.
func ExampleEraser_Forget() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "erasure-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A master key of MasterKeySize bytes; keep a real one outside the
	// database (store.Options.MasterKeyFile, see ReadMasterKeyFile).
	master := bytes.Repeat([]byte{7}, erasure.MasterKeySize)
	s, err := store.Open(ctx, filepath.Join(dir, "events.db"), &store.Options{MasterKey: master})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ev, err := envelope.New("user.registered", map[string]string{"email": "alice@example.org"})
	if err != nil {
		log.Fatal(err)
	}
	ev.Source = "/users"
	if _, err := s.Append(ctx, "default", "user-42", store.NoStream, ev.WithErasureKey("alice")); err != nil {
		log.Fatal(err)
	}

	res, err := erasure.For(s).Forget(ctx, "default", "alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("appended %s to %s; streams %v\n", res.Event.Type, res.Event.Stream, res.Streams)
	for e, err := range s.ReadStream(ctx, "default", "user-42", store.ReadStreamOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: data %q, erased %v\n", e.Type, e.Data, envelope.Erased(e))
	}
	sr, err := erasure.For(s).Scrub(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("scrubbed", sr.Events, "event(s)")
	// Output:
	// appended eventlite.subject.forgotten to eventlite-forgotten; streams [user-42]
	// user.registered: data "", erased true
	// scrubbed 1 event(s)
}
