// Package effectjson is the JSON form of one effect of the ledger: the
// object 'eventlite effects list --json' prints and GET
// /v1/tenants/{tenant}/effects answers, built in one place so that the CLI
// and the HTTP API cannot drift apart.
//
// It knows no engine: an effect reads the same from a SQLite file or a
// PostgreSQL schema.
package effectjson

import (
	"encoding/json"
	"io"
	"time"

	"github.com/eventlite/eventlite/store/effect"
)

// Effect is one effect, its fields in the documented order. Args are the
// stored RFC 8785 canonical bytes (null: none) and ArgsHash the SHA-256 of
// exactly those bytes, 64 lowercase hex digits, so anyone can recompute
// it. Times are RFC 3339 UTC, "" when unset.
type Effect struct {
	Tenant      string          `json:"tenant"`
	Key         string          `json:"key"`
	State       string          `json:"state"`
	Kind        string          `json:"kind"`
	Resource    string          `json:"resource"`
	Summary     string          `json:"summary"`
	Args        json.RawMessage `json:"args"`
	ArgsHash    string          `json:"args_hash"`
	RequestedBy string          `json:"requested_by"`
	RequestedAt string          `json:"requested_at"`
	DecidedBy   string          `json:"decided_by"`
	DecidedAt   string          `json:"decided_at"`
	Reason      string          `json:"reason"`
	Attempts    int             `json:"attempts"`
	LastError   string          `json:"last_error"`
	ProviderRef string          `json:"provider_ref"`
	Created     string          `json:"created"`
	Updated     string          `json:"updated"`
	// ErasureKey names the subject whose data the arguments hold ("":
	// none); ArgsErased says the subject was forgotten (args null and
	// last_error "" for good), ArgsEncrypted that they were read without
	// the master key.
	ErasureKey    string `json:"erasure_key"`
	ArgsErased    bool   `json:"args_erased"`
	ArgsEncrypted bool   `json:"args_encrypted"`
}

// From returns e's JSON form.
func From(e effect.Effect) Effect {
	return Effect{Tenant: e.Tenant, Key: e.Key, State: string(e.State), Kind: string(e.Kind), Resource: e.Resource, Summary: e.Summary,
		Args: e.ArgsText(), ArgsHash: e.ArgsHash(), RequestedBy: e.RequestedBy, RequestedAt: Time(e.RequestedAt),
		DecidedBy: e.DecidedBy, DecidedAt: Time(e.DecidedAt), Reason: e.Reason, Attempts: e.Attempts, LastError: e.LastError,
		ProviderRef: e.ProviderRef, Created: Time(e.CreatedAt), Updated: Time(e.UpdatedAt),
		ErasureKey: e.ErasureKey, ArgsErased: e.ArgsErased, ArgsEncrypted: e.ArgsEncrypted}
}

// Time is t in RFC 3339 UTC with its fraction of a second, "" when zero.
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Encode writes v (an Effect, or a value holding some) as one line of JSON
// without HTML escaping: args keep their stored bytes, so args_hash stays
// the hash of exactly what is written. encoding/json's default would
// write "<" in args as \u003c, whose hash is not args_hash.
func Encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
