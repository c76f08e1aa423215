package serve

import (
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"mime"
	"net/http"
	"slices"
	"sync"
	"time"
)

// The web page at / is three embedded files: no build step, no CDN, so it
// works offline. It reads and writes only through the API; with tokens it
// exchanges one for a session cookie (POST /ui/session), so that the token
// never appears in a URL and EventSource (which cannot send headers) is
// authenticated too.

//go:embed ui/index.html ui/app.js ui/app.css
var uiFiles embed.FS

// SessionCookie is the name of the web page's session cookie.
const SessionCookie = "eventlite_session"

// SessionTTL is how long a session lasts after the exchange.
const SessionTTL = 12 * time.Hour

// MaxSessionsPerToken bounds the sessions kept per token: beyond it, that
// token's oldest session ends. One token never ends another's sessions.
const MaxSessionsPerToken = 1000

// maxSessionBodyBytes bounds POST /ui/session's body.
const maxSessionBodyBytes = 4096

// uiCSP allows the page's own script, style and requests only: even a
// bug that put event data into HTML could run nothing.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveUI answers the page's own paths; it returns false for any other.
func (h *Handler) serveUI(w http.ResponseWriter, r *http.Request) bool {
	var name string
	switch r.URL.Path {
	case "/", "/index.html":
		name = "ui/index.html"
	case "/ui/app.js":
		name = "ui/app.js"
	case "/ui/app.css":
		name = "ui/app.css"
	case "/ui/session":
		switch r.Method {
		case http.MethodPost:
			h.createSession(w, r)
		case http.MethodDelete:
			h.deleteSession(w, r)
		default:
			writeProblem(w, problemf("method-not-allowed", "%s is not allowed on this path; allowed: POST, DELETE", r.Method).with("Allow", "POST, DELETE"))
		}
		return true
	default:
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeProblem(w, problemf("method-not-allowed", "%s is not allowed on this path; allowed: GET, HEAD", r.Method).with("Allow", "GET, HEAD"))
		return true
	}
	b, err := uiFiles.ReadFile(name)
	if err != nil {
		writeProblem(w, problemf("internal", "%v", err))
		return true
	}
	hd := w.Header()
	ct := mime.TypeByExtension(name[len(name)-len(".css"):])
	switch {
	case name == "ui/index.html":
		ct = "text/html; charset=utf-8"
	case name == "ui/app.js":
		ct = "text/javascript; charset=utf-8"
	}
	hd.Set("Content-Type", ct)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", uiCSP)
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(b)
	}
	return true
}

// createSession answers POST /ui/session: {"token":"SECRET"} in, the
// session cookie out, with what the token allows.
func (h *Handler) createSession(w http.ResponseWriter, r *http.Request) {
	if crossSite(r, h.opts.CORSOrigins) {
		writeProblem(w, newProblem("cross-site", "a session is created by this server's own page only"))
		return
	}
	if !h.bufferBody(w, r, maxSessionBodyBytes) {
		return
	}
	body, p := decodeJSONBody(r, maxSessionBodyBytes, `{"token":"SECRET"}`, bodyMember{name: "token", kind: jsonString, required: true})
	if p != nil {
		writeProblem(w, p)
		return
	}
	out := struct {
		Tenant   string `json:"tenant"`
		ReadOnly bool   `json:"read_only"`
	}{Tenant: AllTenants}
	if len(h.tokens) == 0 { // nothing to exchange: every request is allowed
		writeJSON(w, http.StatusOK, out)
		return
	}
	i := h.matchSecret(body.strings["token"])
	if i < 0 {
		writeProblem(w, h.unauthorized(r, "no such token: use one the server was started with"))
		return
	}
	if info := infoOf(r); info != nil {
		info.token = i
	}
	value, err := h.sessions.create(i)
	if err != nil {
		writeProblem(w, problemf("internal", "session: %v", err))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: value, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	out.Tenant, out.ReadOnly = h.tokens[i].tenant, h.tokens[i].readOnly
	writeJSON(w, http.StatusOK, out)
}

// deleteSession answers DELETE /ui/session: the session ends.
func (h *Handler) deleteSession(w http.ResponseWriter, r *http.Request) {
	if p := h.checkSameOrigin(r, true); p != nil {
		writeProblem(w, p)
		return
	}
	h.sessions.remove(r)
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
}

// checkSameOrigin guards a request that changes something. One
// authenticated by the session cookie must show that it comes from this
// server's own page: Sec-Fetch-Site: same-origin, or (from a browser that
// does not send it) an Origin equal to the server's. Any other request is
// refused only when the browser says it is cross-site and its origin is
// not allowed by --cors-origin: without tokens, that keeps another site's
// page from writing to a server on loopback.
func (h *Handler) checkSameOrigin(r *http.Request, cookie bool) *Problem {
	if cookie {
		sfs := r.Header.Get("Sec-Fetch-Site")
		if sfs == "same-origin" || (sfs == "" && r.Header.Get("Origin") == ownOrigin(r)) {
			return nil
		}
		return newProblem("cross-site", "a change authenticated by the session cookie must come from this server's page (Sec-Fetch-Site: same-origin); other clients send Authorization: Bearer SECRET")
	}
	if len(h.tokens) == 0 && crossSite(r, h.opts.CORSOrigins) {
		return newProblem("cross-site", "another site's page may not write here: start the server with --cors-origin ORIGIN to allow it")
	}
	return nil
}

// crossSite reports whether a browser says the request comes from another
// origin than the server's, not one of the allowed CORS origins.
func crossSite(r *http.Request, allowed []string) bool {
	origin := r.Header.Get("Origin")
	if origin != "" && (slices.Contains(allowed, "*") || slices.Contains(allowed, origin)) {
		return false
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	return origin != "" && origin != ownOrigin(r)
}

func ownOrigin(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// sessions are the web page's sessions, keyed by the SHA-256 of the
// cookie's 32 random bytes: the server keeps no cookie value, and the time
// a lookup takes depends on that hash only, which tells a guesser nothing
// about a valid value.
type sessions struct {
	mu      sync.Mutex
	m       map[[sha256.Size]byte]session
	byToken map[int]*sessionQueue // each token's sessions, oldest first
	now     func() time.Time      // the clock; nil is time.Now (tests set it)
}

// sessionQueue is one token's session keys in the order they were made
// (so of their expiry: every session lasts SessionTTL). A removed session
// stays in keys until it reaches the front; n counts the live ones.
type sessionQueue struct {
	keys [][sha256.Size]byte
	n    int
}

func (ss *sessions) clock() time.Time {
	if ss.now != nil {
		return ss.now()
	}
	return time.Now()
}

type session struct {
	token   int // index into Handler.tokens
	expires time.Time
}

// create makes a session for token. Beyond MaxSessionsPerToken, the
// token's own expired sessions go first, then its oldest: another token's
// sessions are never touched.
func (ss *sessions) create(token int) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	now := ss.clock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = make(map[[sha256.Size]byte]session)
		ss.byToken = make(map[int]*sessionQueue)
	}
	q := ss.byToken[token]
	if q == nil {
		q = &sessionQueue{}
		ss.byToken[token] = q
	}
	for len(q.keys) > 0 {
		k := q.keys[0]
		s, live := ss.m[k]
		live = live && s.token == token
		if live && q.n < MaxSessionsPerToken && now.Before(s.expires) {
			break
		}
		q.keys[0] = [sha256.Size]byte{}
		q.keys = q.keys[1:]
		if live {
			delete(ss.m, k)
			q.n--
		}
	}
	if len(q.keys) > 2*MaxSessionsPerToken { // removed sessions piled up: compact
		keep := q.keys[:0:0]
		for _, k := range q.keys {
			if s, ok := ss.m[k]; ok && s.token == token {
				keep = append(keep, k)
			}
		}
		q.keys = keep
	}
	k := sha256.Sum256(raw[:])
	ss.m[k] = session{token: token, expires: now.Add(SessionTTL)}
	q.keys = append(q.keys, k)
	q.n++
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// key is the map key of the request's session cookie.
func sessionKey(r *http.Request) ([sha256.Size]byte, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(raw) != 32 {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(raw), true
}

// lookup returns the token index of the request's live session.
func (ss *sessions) lookup(r *http.Request) (int, bool) {
	k, ok := sessionKey(r)
	if !ok {
		return 0, false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[k]
	if !ok || !ss.clock().Before(s.expires) {
		return 0, false
	}
	return s.token, true
}

func (ss *sessions) remove(r *http.Request) {
	if k, ok := sessionKey(r); ok {
		ss.mu.Lock()
		if s, ok := ss.m[k]; ok {
			delete(ss.m, k)
			ss.byToken[s.token].n--
		}
		ss.mu.Unlock()
	}
}
