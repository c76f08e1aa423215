package envelope

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// The checks of an event's attributes have fast paths (validTenant,
// plainMediaType, the checkedSource memo) that every append's events take.
// These tests hold each to the full check it stands for: the same
// verdict and the same error text, on hostile input.

// tenantRE is the tenant rule as it was written before validTenant, the
// reference the tests compare it with.
var tenantRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// hostileTenants are tenant names at the edges of the rule.
var hostileTenants = []string{
	"", "a", "acme", "A-Z_a-z.0-9", "...", "-", "_", strings.Repeat("t", 63), strings.Repeat("t", 64),
	strings.Repeat("t", 65), strings.Repeat("é", 32), "has space", " acme", "acme ", "acme\n", "a/b",
	`a\b`, "a:b", "a%b", "a'b", "ünïcode", "日本", "nul\x00", "a\xffb", "\xff", "a\u0085", "K", "acme\u200b",
}

func checkTenant(t *testing.T, tenant string) {
	t.Helper()
	if got, want := validTenant(tenant), tenantRE.MatchString(tenant); got != want {
		t.Fatalf("validTenant(%q) = %v, the regular expression says %v", tenant, got, want)
	}
}

func TestValidTenantMatchesRegexp(t *testing.T) {
	for _, tenant := range hostileTenants {
		checkTenant(t, tenant)
	}
	for _, tmpl := range []string{"%s", "a%s", "%sa", "a%sb", strings.Repeat("t", 63) + "%s", "%s" + strings.Repeat("t", 63)} {
		for c := range 256 {
			checkTenant(t, strings.Replace(tmpl, "%s", string([]byte{byte(c)}), 1))
		}
	}
	for n := range 70 {
		checkTenant(t, strings.Repeat("x", n))
	}
}

// hostileContentTypes are content types at the edges of RFC 2046 and of
// the fast path: case, parameters, white space, control characters,
// invalid UTF-8, length.
var hostileContentTypes = []string{
	"application/json", "Application/JSON", "text/json", "text/plain", "application/octet-stream",
	"application/cloudevents+json", "application/vnd.example.order+json", "application/x-www-form-urlencoded",
	"a/b", "A/B", "*/*", "a/*", "x-!#$%&'*+.^_`|~/y", "application/json; charset=utf-8",
	"application/json;charset=utf-8", "application/json;", "application/json; ", "text/plain; =x",
	`text/plain; charset="utf-8"`, "a/b;c=d;c=e", "a/b; c*0=x; c*1=y", "a/b;;", "a/b; c", "multipart/form-data; boundary=x",
	"xyz", "text/", "/json", "/", "//", "a/b/c", "a//b", "application /json", "application/ json",
	" application/json", "application/json ", "application/json\t", "\tapplication/json", "application/json\x00",
	"application/json\x7f", "application/jsön", "\xff/json", "application/json\xff", "application/json\u0085",
	"application\u00a0/json", "a/b(c)", "a/b@c", "a/b,c", "a/b:c", "a/b\\c", `a/b"c`, "a/b[c]", "a/b?c", "a/b=c",
	"a/b<c>", "", strings.Repeat("a", 1020) + "/bcd", strings.Repeat("a", 1021) + "/bcd",
	strings.Repeat("a", 2000) + "/b", "application/json" + strings.Repeat(" ", 2000),
}

func checkContentType(t *testing.T, ct string) {
	t.Helper()
	got, want := validateContentType(ct), validateContentTypeFull(ct)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("validateContentType(%.200q) = %v, the full check says %v", ct, got, want)
	}
	if plainMediaType(ct) && want != nil {
		t.Fatalf("plainMediaType(%.200q) passes what the full check refuses: %v", ct, want)
	}
}

func TestContentTypeFastPath(t *testing.T) {
	for _, ct := range hostileContentTypes {
		checkContentType(t, ct)
	}
	templates := []string{"%s", "%s/b", "a/%s", "a%s/b", "a/%sb", "a/b%s", "%sa/b", "a%sb", "a/b;%s", "a/b; c=%s", "%s%s"}
	for _, tmpl := range templates {
		for c := range 256 {
			checkContentType(t, strings.ReplaceAll(tmpl, "%s", string([]byte{byte(c)})))
		}
	}
	// Every string of up to three bytes over an alphabet of the bytes
	// that matter.
	alphabet := []byte{'a', 'B', '/', ';', '=', ' ', '\t', '"', '+', '*', 0, 0x7f, 0xc3, 0xa9}
	var all func(prefix []byte, n int)
	all = func(prefix []byte, n int) {
		checkContentType(t, string(prefix))
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			all(append(prefix, c), n-1)
		}
	}
	all(nil, 3)
	// The common types take the fast path, which does not allocate.
	for _, ct := range []string{"application/json", "Application/JSON", "application/cloudevents+json", "text/plain", "application/octet-stream"} {
		if !plainMediaType(ct) {
			t.Errorf("%s does not take the fast path", ct)
		}
		if n := testing.AllocsPerRun(100, func() { _ = validateContentType(ct) }); n != 0 {
			t.Errorf("validateContentType(%s) allocates %v times", ct, n)
		}
	}
}

// hostileSources are sources at the edges of a URI-reference and of an
// attribute string.
var hostileSources = []string{
	"/bench", "/s", "s", "https://orders.example.com/api", "urn:x:y", "mailto:x@y", "#frag", "?q", "//host/p",
	"", " /s", "/s ", "/s\x00", "/s\x7f", "/s\u0085", "/s\t", "\xff", "/a\xffb", "http://[::1", "http://[::1]:80/p",
	"http://host:port", "http://host:80", ":foo", "%zz", "/a%20b", "/a%2", "http://a b", "http://a%zzb/", "//[bad",
	"a:b:c", "1a:b", "/日本", "/\u00a0x", "x\u2028", strings.Repeat("a", 1024), strings.Repeat("a", 1025),
	"/bencH", "/bench/", "bench", "/benc", "/bench\x00",
}

// checkSourceAfter checks src after checkSource has seen prev: the verdict
// and the error text are the full check's.
func checkSourceAfter(t *testing.T, prev, src string) {
	t.Helper()
	checkedSource.Store(nil)
	_ = checkSource(prev)
	got, want := checkSource(src), checkSourceFull(src)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("checkSource(%.200q) after %.200q = %v, the full check says %v", src, prev, got, want)
	}
}

func TestCheckSourceMemo(t *testing.T) {
	for _, prev := range hostileSources {
		for _, src := range hostileSources {
			checkSourceAfter(t, prev, src)
		}
	}
	for _, tmpl := range []string{"%s", "/bench%s", "/%sench", "https://x%s/y", "http://%s"} {
		for c := range 256 {
			src := strings.Replace(tmpl, "%s", string([]byte{byte(c)}), 1)
			checkSourceAfter(t, "/bench", src)
			checkSourceAfter(t, src, "/bench")
			checkSourceAfter(t, src, src)
		}
	}
	// A hit does not allocate.
	src := "https://orders.example.com/api"
	if n := testing.AllocsPerRun(100, func() {
		if err := checkSource(src); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("checkSource of the source it last accepted allocates %v times", n)
	}
}

// The memo keeps a copy: a caller that reuses the bytes under a string
// (unsafe.String over a buffer) cannot make it pass what it never
// checked.
func TestCheckSourceMemoKeepsACopy(t *testing.T) {
	checkedSource.Store(nil)
	buf := []byte("/bench")
	src := unsafe.String(&buf[0], len(buf))
	if err := checkSource(src); err != nil {
		t.Fatal(err)
	}
	copy(buf, "/be\x00ch")
	got, want := checkSource(src), checkSourceFull(src)
	if want == nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("checkSource after the bytes changed: %v, the full check says %v", got, want)
	}
}

// Appenders in several goroutines share the memo: each gets the full
// check's verdict whatever the others check (run with -race).
func TestCheckSourceMemoConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				src := hostileSources[(w*7+i)%len(hostileSources)]
				got, want := checkSource(src), checkSourceFull(src)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("checkSource(%.200q) = %v, the full check says %v", src, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzAttributeFastPaths holds the fast paths to the full checks on any
// input: a tenant, a content type, and a source checked after another.
func FuzzAttributeFastPaths(f *testing.F) {
	for _, s := range hostileTenants {
		f.Add(s, "/bench")
	}
	for _, s := range hostileContentTypes {
		f.Add(s, s)
	}
	for i, s := range hostileSources {
		f.Add(hostileSources[(i+1)%len(hostileSources)], s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkTenant(t, a)
		checkContentType(t, a)
		checkSourceAfter(t, a, b)
	})
}
