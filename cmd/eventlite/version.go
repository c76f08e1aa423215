package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/eventlite/eventlite/store"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
// When empty, the module version from the build info is used.
var version = ""

var versionCommand = &command{
	name:    "version",
	summary: "print the version, the Go version and the schema versions",
	usage:   "eventlite version",
	about: `Prints eventlite's version, the Go version it was built with and the
schema versions it writes: a SQLite file's, and a PostgreSQL schema's
(numbered on its own); with --json, one object:
  {"version":"v1.2.3","go":"go1.26.8","schema":15,"postgres_schema":1}`,
	new: func() runner { return versionCmd{} },
}

type versionCmd struct{}

func (versionCmd) flags(*flag.FlagSet) {}

type versionOutput struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	Schema  int    `json:"schema"`
	// PostgresSchema is the schema version of a store on PostgreSQL,
	// whose migrations are numbered on their own.
	PostgresSchema int `json:"postgres_schema"`
}

func (versionCmd) run(_ context.Context, c *cli, _ []string) error {
	v := versionOutput{Version: buildVersion(), Go: runtime.Version(), Schema: store.SchemaVersion(), PostgresSchema: store.PostgresSchemaVersion()}
	if c.global.json {
		return writeJSON(c.stdout, v)
	}
	_, err := fmt.Fprintf(c.stdout, "eventlite %s\n%s\nschema version %d\npostgres schema version %d\n", v.Version, v.Go, v.Schema, v.PostgresSchema)
	return err
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
