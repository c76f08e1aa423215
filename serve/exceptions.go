package serve

import (
	"net/http"
	"net/url"
)

// What the server answers itself, beyond its routes, is a problem too;
// what net/http answers before any handler runs (a request line it
// cannot parse, headers over its limit, ...) is listed in docs/http.md,
// and TestNetHTTPExceptions keeps that list true.

// checkQuery refuses a query string that does not parse: a '%' not
// followed by two hex digits, or a ';' (which Go no longer takes as a
// separator). r.URL.Query drops such a pair without a word, so that
// ?from=%zz would read from the start; 400 invalid-parameter instead.
func checkQuery(r *http.Request) *Problem {
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		reason := "must be name=value pairs joined by &, percent-encoded as RFC 3986 says"
		p := problemf("invalid-parameter", "the query string is malformed (%v): it %s", err, reason)
		p.Field, p.Reason = "query", reason
		return p
	}
	return nil
}
