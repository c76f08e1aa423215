package pgdriver

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eventlite/eventlite/store/internal/driver"
	"github.com/eventlite/eventlite/store/internal/pgaddr"
)

func TestParseAddress(t *testing.T) {
	for _, c := range []struct {
		addr, schema, conn string
	}{
		{"postgres://u@h:5432/db", pgaddr.DefaultSchema, "postgres://u@h:5432/db"},
		{"postgresql://u@h/db?sslmode=disable", pgaddr.DefaultSchema, "postgresql://u@h/db?sslmode=disable"},
		{"POSTGRES://u@h/db?eventlite_schema=orders", "orders", "POSTGRES://u@h/db"},
		{"postgres://u@h/db?sslmode=verify-full&eventlite_schema=app_2&sslrootcert=%2Fca.pem", "app_2", "postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fca.pem"},
	} {
		a, err := pgaddr.ParseAddress(c.addr)
		if err != nil {
			t.Fatalf("%s: %v", c.addr, err)
		}
		if a.Schema != c.schema {
			t.Errorf("%s: schema %q, want %q", c.addr, a.Schema, c.schema)
		}
		// Same URL up to the order of the parameters.
		got, _ := url.Parse(a.ConnString)
		want, _ := url.Parse(c.conn)
		if got.Query().Encode() != want.Query().Encode() || got.Host != want.Host || got.Path != want.Path {
			t.Errorf("%s: conn string %q, want %q", c.addr, a.ConnString, c.conn)
		}
		if strings.Contains(a.ConnString, pgaddr.SchemaParam) {
			t.Errorf("%s: %s not stripped: %q", c.addr, pgaddr.SchemaParam, a.ConnString)
		}
	}
}

func TestParseAddressRefuses(t *testing.T) {
	for _, c := range []struct {
		addr   string
		schema bool // a *pgaddr.SchemaError, else an *pgaddr.AddressError
	}{
		{"file:app.db", false},
		{"app.db", false},
		{"mysql://u@h/db", false},
		{"postgres://u:pw@[::1/db", false},
		{"postgres://u@h/db?eventlite_schema=a&eventlite_schema=b", false},
		{"postgres://u@h/db?eventlite_schema=", true},
		{"postgres://u@h/db?eventlite_schema=Orders", true},
		{"postgres://u@h/db?eventlite_schema=1orders", true},
		{"postgres://u@h/db?eventlite_schema=or-ders", true},
		{"postgres://u@h/db?eventlite_schema=%22x%22", true},
		{"postgres://u@h/db?eventlite_schema=pg_catalog", true},
		{"postgres://u@h/db?eventlite_schema=public", true},
		{"postgres://u@h/db?eventlite_schema=" + strings.Repeat("a", 64), true},
	} {
		_, err := pgaddr.ParseAddress(c.addr)
		var se *pgaddr.SchemaError
		var ae *pgaddr.AddressError
		switch {
		case c.schema && !errors.As(err, &se):
			t.Errorf("%s: %v, want a *pgaddr.SchemaError", c.addr, err)
		case !c.schema && !errors.As(err, &ae):
			t.Errorf("%s: %v, want an *pgaddr.AddressError", c.addr, err)
		}
	}
	if err := pgaddr.ValidateSchema(strings.Repeat("a", 63)); err != nil {
		t.Errorf("63 bytes: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:s3cret@h:5432/db", "postgres://u:xxxxx@h:5432/db"},
		{"postgres://u@h/db?password=s3cret&sslmode=disable", "postgres://u@h/db?password=xxxxx&sslmode=disable"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://u:s3cret@[::1/db", "(unparsable address)"},
		{"host=h user=u password=s3cret", "(address withheld: not a URL of the form scheme://host/...)"},
		{"postgres:u:s3cret@h/db", "(address withheld: not a URL of the form scheme://host/...)"},
	} {
		if got := pgaddr.Redact(c.in); got != c.want {
			t.Errorf("pgaddr.Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// secret is the password the tests feed through every error path.
const secret = "Zq8sEcReTpw"

// TestPasswordNeverInErrors feeds an address with a password through every
// error path Open has, offline and against the test server, and checks
// that no error message holds it.
func TestPasswordNeverInErrors(t *testing.T) {
	ctx := context.Background()
	offline := []string{
		"postgres://u:" + secret + "@[::1/db",                                        // bad host: not a URL
		"postgres://u:" + secret + "@h:99999x/db",                                    // bad port
		"postgres://u:" + secret + "@h/db?eventlite_schema=Bad",                      // bad schema
		"postgres://u@h/db?password=" + secret + "&eventlite_schema=1x",              // bad schema, password parameter
		"postgres://u:" + secret + "@h/db?sslmode=bogus",                             // pgx refuses a parameter
		"postgres://u:" + secret + "@no-such-host.invalid:5432/db?connect_timeout=5", // host that does not resolve
		"postgres://u:" + secret + "@127.0.0.1:1/db?connect_timeout=5",               // nothing listening
		"mysql://u:" + secret + "@h/db",                                              // not postgres
	}
	for _, addr := range offline {
		err := open(ctx, addr)
		if err == nil {
			t.Errorf("%s: opened", pgaddr.Redact(addr))
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the password is in the error: %v", err)
		}
	}
	base := testURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	// Authentication failure: a role that does not exist (the test server
	// trusts every role that does, so a wrong password alone would pass).
	u.User = url.UserPassword("no_such_role_eventlite", secret)
	err = open(ctx, u.String())
	if err == nil {
		t.Fatal("a role that does not exist connected")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the password is in the error: %v", err)
	}
	if !strings.Contains(err.Error(), "no_such_role_eventlite") {
		t.Errorf("the error does not say which role failed: %v", err)
	}
	// A database that does not exist.
	u.User = url.UserPassword("postgres", secret)
	u.Path = "/no_such_db_eventlite"
	if err := open(ctx, u.String()); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("missing database: %v", err)
	}
}

// TestSchemaGivenTwice: Options.Schema and the address's eventlite_schema
// must agree, and Options.Schema is validated like the parameter.
func TestSchemaGivenTwice(t *testing.T) {
	_, err := Driver{}.OpenWriter(driver.OpenConfig{Path: "postgres://u@h/db?eventlite_schema=a", Schema: "b"})
	var ae *pgaddr.AddressError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "give one") {
		t.Errorf("schema given twice, differently: %v", err)
	}
	_, err = Driver{}.OpenWriter(driver.OpenConfig{Path: "postgres://u@h/db", Schema: "Bad"})
	var se *pgaddr.SchemaError
	if !errors.As(err, &se) {
		t.Errorf("bad Options.Schema: %v, want a *pgaddr.SchemaError", err)
	}
}

// open opens the writer's pool on addr and connects, as the store does.
func open(ctx context.Context, addr string) error {
	db, err := Driver{}.OpenWriter(driver.OpenConfig{Path: addr, BusyTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}
