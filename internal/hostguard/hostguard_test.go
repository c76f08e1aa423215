package hostguard

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestAllowed(t *testing.T) {
	c, err := New([]string{"Events.Internal"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"localhost": true, "localhost:7777": true, "LocalHost.:1": true,
		"127.0.0.1": true, "127.0.0.1:80": true, "[::1]": true, "[::1]:7777": true,
		"10.0.0.8:9464": true, "[fe80::1%25eth0]:1": true, "[127.0.0.1]": false, "[2001:db8::1]:443": true,
		"events.internal": true, "EVENTS.INTERNAL:8080": true,
		"": false, ":80": false, "evil.example": false, "evil.example:7777": false,
		"localhost.evil.example": false, "127.0.0.1.nip.io": false, "x.events.internal": false,
		"events.internal.evil.example:1": false, "[localhost]": false, "[localhost]:1": false, "::1:80": false,
	} {
		if got := c.Allowed(host); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", host, got, want)
		}
	}
	for _, bad := range []string{"", "a:1", "http://a", "a/b", "a b", "[::1]"} {
		if _, err := New([]string{bad}); err == nil {
			t.Errorf("New(%q): no error", bad)
		}
	}
}

// Whatever the Host, an allowed one names localhost, an IP literal or an
// allowed name.
func FuzzAllowed(f *testing.F) {
	for _, s := range []string{"localhost:1", "[::1]:2", "1.2.3.4", "evil.example:80", "a.example", "[a.example]:1"} {
		f.Add(s)
	}
	c, err := New([]string{"a.example"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !c.Allowed(host) {
			return
		}
		name := host
		if h, _, err := net.SplitHostPort(host); err == nil {
			name = h
		}
		name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
		if _, err := netip.ParseAddr(name); err == nil {
			return
		}
		if n := strings.TrimSuffix(strings.ToLower(name), "."); n != "localhost" && n != "a.example" {
			t.Fatalf("Allowed(%q): %q is neither localhost, an IP nor an allowed name", host, name)
		}
	})
}
