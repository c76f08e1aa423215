package serve

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/eventlite/eventlite/envelope"
)

// AllTenants as a Token's Tenant gives access to every tenant and to the
// store-wide paths (/metrics, /v1/consumers, /v1/doctor).
const AllTenants = "*"

// Token is one bearer token and what it may do.
type Token struct {
	Secret   string
	Tenant   string // a tenant, or AllTenants
	ReadOnly bool
}

// ParseToken reads the CLI's form SECRET=TENANT[:ro].
func ParseToken(s string) (Token, error) {
	secret, rest, ok := strings.Cut(s, "=")
	if !ok || secret == "" {
		return Token{}, fmt.Errorf("token %q: want SECRET=TENANT or SECRET=TENANT:ro", redact(s))
	}
	t := Token{Secret: secret, Tenant: rest}
	if tenant, ok := strings.CutSuffix(rest, ":ro"); ok {
		t.Tenant, t.ReadOnly = tenant, true
	}
	if strings.ContainsFunc(secret, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return Token{}, fmt.Errorf("token for tenant %q: the secret must be visible ASCII (it is sent in an Authorization header)", t.Tenant)
	}
	if t.Tenant != AllTenants {
		if err := envelope.ValidateTenant(t.Tenant); err != nil {
			return Token{}, fmt.Errorf("token for tenant %q: %w (or use * for every tenant)", t.Tenant, err)
		}
	}
	return t, nil
}

// ParseTokens reads a tokens file: one SECRET=TENANT[:ro] per line; blank
// lines and lines starting with # are skipped.
func ParseTokens(r io.Reader) ([]Token, error) {
	var out []Token
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t, err := ParseToken(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, t)
	}
	return out, sc.Err()
}

// redact keeps a secret out of an error message.
func redact(s string) string {
	if _, rest, ok := strings.Cut(s, "="); ok {
		return "...=" + rest
	}
	return "..."
}

// TokenError is a token New refuses: an empty secret, or a secret
// another token has too (a request would get the first one's rights,
// whatever the second says). It names the token by its place in
// Options.Tokens, from 1, and its tenant, never by its secret.
type TokenError struct {
	Index  int    // the token's place in Options.Tokens, from 1
	Tenant string // its tenant
	// Same is the place of the earlier token with the same secret; 0
	// when the secret is empty.
	Same       int
	SameTenant string
}

func (e *TokenError) Error() string {
	if e.Same == 0 {
		return fmt.Sprintf("serve: token %d (tenant %q) has an empty secret: give it one", e.Index, e.Tenant)
	}
	return fmt.Sprintf("serve: token %d (tenant %q) has the same secret as token %d (tenant %q): give every token a secret of its own", e.Index, e.Tenant, e.Same, e.SameTenant)
}

// ValidateTokens applies New's rule for tokens, so that a program can
// check them before it opens a store or a port: every secret is given,
// and no two tokens share one. The error is a *TokenError.
func ValidateTokens(ts []Token) error {
	seen := make(map[string]int, len(ts))
	for i, t := range ts {
		if t.Secret == "" {
			return &TokenError{Index: i + 1, Tenant: t.Tenant}
		}
		if j, ok := seen[t.Secret]; ok {
			return &TokenError{Index: i + 1, Tenant: t.Tenant, Same: j + 1, SameTenant: ts[j].Tenant}
		}
		seen[t.Secret] = i
	}
	return nil
}

type tokenEntry struct {
	hash     [sha256.Size]byte
	tenant   string
	readOnly bool
}

func hashTokens(ts []Token) []tokenEntry {
	out := make([]tokenEntry, len(ts))
	for i, t := range ts {
		out[i] = tokenEntry{hash: sha256.Sum256([]byte(t.Secret)), tenant: t.Tenant, readOnly: t.ReadOnly}
	}
	return out
}

// access is what a request's token allows.
type access struct {
	all      bool // no tokens configured: every tenant, writes included
	tenant   string
	readOnly bool
	cookie   bool // authenticated by the web page's session cookie
}

// lookup finds the request's token. Every configured token is compared,
// in constant time on hashes of equal length, so neither the secret's
// length nor which token matched shows in the time taken.
func (h *Handler) lookup(r *http.Request) (access, bool) {
	if len(h.tokens) == 0 {
		return access{all: true}, true
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		if i, ok := h.sessions.lookup(r); ok {
			if info := infoOf(r); info != nil {
				info.token = i
			}
			t := h.tokens[i]
			return access{tenant: t.tenant, readOnly: t.readOnly, cookie: true}, true
		}
		return access{}, false
	}
	scheme, secret, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return access{}, false
	}
	found := h.matchSecret(strings.TrimSpace(secret))
	if found < 0 {
		return access{}, false
	}
	if info := infoOf(r); info != nil {
		info.token = found
	}
	t := h.tokens[found]
	return access{tenant: t.tenant, readOnly: t.readOnly}, true
}

// matchSecret returns the index of the token whose secret is secret, or
// -1. Every token is compared, in constant time on hashes of equal length.
func (h *Handler) matchSecret(secret string) int {
	sum := sha256.Sum256([]byte(secret))
	found := -1
	for i := range h.tokens {
		if subtle.ConstantTimeCompare(sum[:], h.tokens[i].hash[:]) == 1 && found < 0 {
			found = i
		}
	}
	return found
}

// authorize checks the request's token for tenant ("" for a store-wide
// path) and, when write, for writing.
func (h *Handler) authorize(r *http.Request, tenant string, write bool) *Problem {
	a, ok := h.lookup(r)
	if ok && write {
		if p := h.checkSameOrigin(r, a.cookie); p != nil {
			return p
		}
	}
	if !ok {
		return h.unauthorized(r, "send Authorization: Bearer SECRET with a token the server was started with")
	}
	if a.all {
		return nil
	}
	if a.tenant != AllTenants && (tenant == "" || a.tenant != tenant) {
		if tenant == "" {
			return newProblem("tenant-forbidden", "this path covers every tenant: it needs a token for tenant *")
		}
		p := problemf("tenant-forbidden", "the token is for another tenant than %q", tenant)
		p.Tenant = tenant
		return p
	}
	if write && a.readOnly {
		p := newProblem("read-only", "the token is read-only (:ro): use a token without :ro to write")
		p.Tenant = tenant
		return p
	}
	return nil
}
