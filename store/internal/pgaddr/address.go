// Package pgaddr reads PostgreSQL addresses (postgres:// URLs): which
// addresses are PostgreSQL's, the schema they name, and how to print
// them without their password. It needs only net/url, so that package
// store can recognise and redact an address without linking the
// PostgreSQL driver.
package pgaddr

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// DefaultSchema is the schema the store's tables live in when the address
// names none.
const DefaultSchema = "eventlite"

// SchemaParam is the URL parameter that names the schema. It is removed
// from the address before pgx reads it (pgx would send it to the server as
// a run-time setting, which the server refuses).
const SchemaParam = "eventlite_schema"

// maxIdentifier is PostgreSQL's NAMEDATALEN-1: a longer name is silently
// truncated by the server.
const maxIdentifier = 63

var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Address is a parsed postgres:// address.
type Address struct {
	// ConnString is the address pgx parses: the caller's, without the
	// eventlite_schema parameter. It may hold a password: never print it,
	// print Redacted.
	ConnString string
	// Schema is the schema the store's tables live in.
	Schema string
	// SchemaGiven says whether the address named the schema.
	SchemaGiven bool
	// Redacted is the address with any password replaced by "xxxxx".
	Redacted string
}

// IsAddress reports whether addr is a PostgreSQL address (postgres:// or
// postgresql://), as opposed to a SQLite file.
func IsAddress(addr string) bool {
	l := strings.ToLower(addr)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// AddressError says why an address cannot be used. Address is redacted.
type AddressError struct {
	Address string // redacted
	Reason  string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("postgres address %s: %s", e.Address, e.Reason)
}

// SchemaError says why a schema name is refused.
type SchemaError struct {
	Schema string
	Reason string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("schema %q: %s: use a plain lowercase identifier (a-z, 0-9, _; not starting with a digit or pg_; at most %d bytes)", e.Schema, e.Reason, maxIdentifier)
}

// ValidateSchema checks that name is a plain lowercase identifier that
// PostgreSQL takes as it is, so it can be quoted and compared without
// surprises. It returns a *SchemaError otherwise.
func ValidateSchema(name string) error {
	switch {
	case name == "":
		return &SchemaError{Schema: name, Reason: "empty"}
	case len(name) > maxIdentifier:
		return &SchemaError{Schema: name, Reason: "too long"}
	case !schemaPattern.MatchString(name):
		return &SchemaError{Schema: name, Reason: "not a plain lowercase identifier"}
	case strings.HasPrefix(name, "pg_"):
		return &SchemaError{Schema: name, Reason: "the pg_ prefix is reserved by PostgreSQL"}
	case name == "information_schema" || name == "public":
		return &SchemaError{Schema: name, Reason: "reserved for PostgreSQL's own use"}
	}
	return nil
}

// ParseAddress reads a postgres:// or postgresql:// address: it takes the
// schema from the eventlite_schema parameter (DefaultSchema without one),
// validates it and strips it from the address pgx will see. Errors are
// *AddressError or *SchemaError and never hold the password.
func ParseAddress(addr string) (*Address, error) {
	red := Redact(addr)
	if !IsAddress(addr) {
		return nil, &AddressError{Address: red, Reason: "not a postgres:// or postgresql:// URL"}
	}
	u, err := url.Parse(addr)
	if err != nil {
		// url's error quotes the address, password included, and its
		// reasons quote parts of it (a port, a host): say none of it.
		return nil, &AddressError{Address: red, Reason: "not a valid URL: check the host, the port and the percent-encoding of the user name and password"}
	}
	q := u.Query()
	schema := DefaultSchema
	vs, given := q[SchemaParam]
	if given {
		if len(vs) != 1 {
			return nil, &AddressError{Address: red, Reason: SchemaParam + " given more than once"}
		}
		schema = vs[0]
		q.Del(SchemaParam)
		u.RawQuery = q.Encode()
	}
	if err := ValidateSchema(schema); err != nil {
		return nil, err
	}
	return &Address{ConnString: u.String(), Schema: schema, SchemaGiven: given, Redacted: Redact(u.String())}, nil
}

// Redact returns addr with its password (in the user info or a password
// parameter) replaced by "xxxxx". An address that is not a
// scheme://host/... URL is not echoed at all: it may hold a password where
// Redact cannot find it.
func Redact(addr string) string {
	u, err := url.Parse(addr)
	if err != nil {
		return "(unparsable address)"
	}
	if u.Scheme == "" || u.Opaque != "" {
		// Not scheme://host/...: a key=value connection string or
		// scheme:opaque, where a password would sit unrecognised.
		return "(address withheld: not a URL of the form scheme://host/...)"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return "(unparsable address)"
		}
		for k := range q {
			if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Scrub replaces every password addr holds (user info, password
// parameters) in msg with "xxxxx".
func Scrub(msg, addr string) string {
	u, err := url.Parse(addr)
	if err != nil {
		return "(message withheld: it may hold the password)"
	}
	var pws []string
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			pws = append(pws, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
	}
	for k, vs := range u.Query() {
		if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
			for _, v := range vs {
				pws = append(pws, v, url.QueryEscape(v))
			}
		}
	}
	for _, pw := range pws {
		if pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}
