package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/erasure"
)

var forgetCommand = &command{
	name:    "forget",
	args:    []string{"SUBJECT-KEY"},
	summary: "forget a subject: destroy its data key, erasing the data of its events",
	usage:   "eventlite forget SUBJECT-KEY [--tenant T]",
	about: `Erasure by crypto-shredding. Events appended with the erasurekey extension
(append --erasure-key SUBJECT, or the attribute "erasurekey" in CloudEvents
JSON) have their data encrypted with the data key of (tenant, SUBJECT),
created on first use and stored wrapped by the master key, which never
enters the database: --master-key-file FILE or $EVENTLITE_MASTER_KEY_FILE,
a file of 32 raw bytes or 64 hex digits (openssl rand -hex 32 > master.key).

forget destroys the data key of SUBJECT-KEY in the tenant, drops the
snapshots of the streams holding its events, removes the data from the
copies of them kept in quarantine and deferral, and appends
eventlite.subject.forgotten {"erasurekey":"SUBJECT-KEY"} to the tenant's
stream eventlite-forgotten, so that read models purge what they derived.
Those events then read with their attributes, no data, and
"dataerased":true. Other tenants are untouched. It needs no master key.

The ciphertext stays in the file until a scrub removes it (retention's
scavenge). Copies already published by the relay (JetStream, downstream
stores) and backups are out of reach: see the erasure section of the docs.

Prints the streams whose snapshots were dropped; with --json, one object:
  {"tenant":"default","erasurekey":"user-42","already":false,"position":"18","streams":["user-42"],"copies":0,"tombstone":false}
A subject this store holds no key of (a consumer only received its
events from another service, whose tenant is the tenant here of the
same name, "default" for none) exits 0 and keeps a tombstone
("tombstone":true): a copy of its events in the deferral buffer loses
its data now, and an event of it redelivered later is stored without
data. One forgotten before prints "already forgotten" and changes
nothing.`,
	new: func() runner { return &forgetCmd{} },
}

type forgetCmd struct{}

func (f *forgetCmd) flags(fs *flag.FlagSet) {}

type forgetOutput struct {
	Tenant     string   `json:"tenant"`
	ErasureKey string   `json:"erasurekey"`
	Already    bool     `json:"already"`
	Position   int64    `json:"position,string"`
	Streams    []string `json:"streams"`
	Copies     int64    `json:"copies"`
	Tombstone  bool     `json:"tombstone"`
}

func (f *forgetCmd) run(ctx context.Context, c *cli, args []string) error {
	tenant, subject := string(c.global.tenant), args[0]
	var res erasure.ForgetResult
	err := c.withStore(ctx, false, func(s *store.Store) error {
		var err error
		res, err = erasure.For(s).Forget(ctx, tenant, subject)
		return err
	})
	if err != nil {
		return err
	}
	if c.global.json {
		streams := res.Streams
		if streams == nil {
			streams = []string{}
		}
		return writeJSON(c.stdout, forgetOutput{Tenant: tenant, ErasureKey: subject, Already: res.Already,
			Position: res.Event.Position, Streams: streams, Copies: res.Copies, Tombstone: res.Tombstone})
	}
	if res.Already {
		_, err := fmt.Fprintf(c.stdout, "subject %q (tenant %s) already forgotten\n", subject, tenant)
		return err
	}
	note := ""
	if res.Tombstone {
		note = " (no key here: a tombstone was kept)"
	}
	_, err = fmt.Fprintf(c.stdout, "forgot subject %q (tenant %s) at position %d: %d stream(s) %v, %d copies erased%s\n",
		subject, tenant, res.Event.Position, len(res.Streams), res.Streams, res.Copies, note)
	return err
}

// requireMasterKey refuses to start a command that shows or publishes
// data (relay, serve, replay, catalog) without a master key while the
// store holds encrypted events: it would publish or derive them without
// their data. Exit 2, naming the flag.
func requireMasterKey(ctx context.Context, s *store.Store, name string) error {
	e := erasure.For(s)
	if e.HasMasterKey() {
		return nil
	}
	enc, err := e.Encrypted(ctx)
	if err != nil {
		return err
	}
	if enc {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: the store holds encrypted events (erasurekey) and no master key was given: pass --master-key-file FILE or set $EVENTLITE_MASTER_KEY_FILE", name)}
	}
	return nil
}
