// Package hostguard holds the Host rule that eventlite's HTTP servers
// share (serve's API and the CLI's --metrics servers), so that a web page
// whose name an attacker rebinds to 127.0.0.1 (DNS rebinding) reaches no
// handler: the browser sends the attacker's name in Host, and only names
// that cannot be rebound, or that the operator named, are served.
//
// It knows no engine.
package hostguard

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Problem is the name of the problem a refused request gets: its type is
// serve's ProblemTypeBase + Problem (serve's tests keep the two equal).
const Problem = "host-not-allowed"

// Status is the status of a refused request.
const Status = http.StatusForbidden

// TypeBase is serve.ProblemTypeBase, repeated here so that a server
// without package serve writes the same problem.
const TypeBase = "https://github.com/eventlite/eventlite/blob/main/docs/http.md#"

// Title is the refused request's problem title.
const Title = "The Host header names a host this server does not answer for"

// Check is a compiled list of allowed names.
type Check struct {
	names map[string]bool // lower case, without a trailing dot
}

// New returns the check that allows localhost, every IP literal and
// names (host names without a port, compared without regard to case).
// A name that is empty, carries a port or a scheme, or holds characters a
// host name cannot hold is an error naming it.
func New(names []string) (*Check, error) {
	c := &Check{names: map[string]bool{"localhost": true}}
	for _, n := range names {
		if err := Validate(n); err != nil {
			return nil, err
		}
		c.names[normal(n)] = true
	}
	return c, nil
}

// Validate reports whether name can be allowed: a host name (letters,
// digits, '-', '.', '_'), without a port.
func Validate(name string) error {
	if name == "" {
		return fmt.Errorf("allowed host %q: empty: give a host name such as events.internal", name)
	}
	for _, r := range name {
		ok := r == '-' || r == '.' || r == '_' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return fmt.Errorf("allowed host %q: %q is not allowed in a host name: give the name alone, without a scheme or a port (any port is allowed)", name, r)
		}
	}
	return nil
}

func normal(name string) string { return strings.TrimSuffix(strings.ToLower(name), ".") }

// Allowed reports whether a request's Host (host or host:port) is served:
// localhost, an IP literal (v4, or v6 in brackets) or an allowed name,
// whatever the port. An empty Host is not.
func (c *Check) Allowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if host == "" {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Is6() == strings.HasPrefix(hostport, "[") // brackets for IPv6 only
	}
	return !strings.ContainsAny(hostport, "[]") && c.names[normal(host)]
}

// Detail is the refused request's problem detail.
func Detail(host string) string {
	return fmt.Sprintf("Host %q is not served here: use localhost, 127.0.0.1, [::1] or an IP address, or start the server with --allow-host NAME", host)
}

// Handler refuses a request whose Host is not allowed with Status and an
// RFC 9457 problem before next sees it.
func (c *Check) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.Allowed(r.Host) {
			b, _ := json.Marshal(map[string]any{"type": TypeBase + Problem, "title": Title, "status": Status, "detail": Detail(r.Host)})
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(Status)
			_, _ = w.Write(append(b, '\n'))
			return
		}
		next.ServeHTTP(w, r)
	})
}
