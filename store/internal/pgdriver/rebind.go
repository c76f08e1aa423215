package pgdriver

import (
	"strings"
	"sync"
)

// Rebind returns query with its ? placeholders numbered for PostgreSQL
// ($1, $2, ... in order), so that a caller's SQL written with SQLite's
// placeholders runs on both engines. It reads query with the lexer of the
// transaction-control check (skipToken): a ? inside a string constant
// ('...', E'...'), a quoted identifier, a comment or a dollar quote is
// text, not a placeholder. A query that already holds a $n parameter is
// returned unchanged, so that PostgreSQL's jsonb operators ?, ?| and ?&
// can be written there; in a query without $n, ?? stands for a literal ?
// (the jsonb operator, written ??, ??| or ??&).
//
// A query without ? costs one byte scan and no allocation; a rebound
// query is cached (bounded), so a handler's statements are lexed once.
func (Exec) Rebind(query string) string {
	if strings.IndexByte(query, '?') < 0 {
		return query
	}
	return rebinds.get(query)
}

// rebindCacheSize bounds the rebinding cache: a program's handlers run
// a fixed set of statements, far fewer than this; a program that builds
// its SQL text per call only empties the cache more often.
const rebindCacheSize = 512

type rebindCache struct {
	mu sync.RWMutex
	m  map[string]string
}

// rebinds is a zero value, ready before any package variable's
// initializer runs (the dialect's statements are bound at init); its map
// is made on first use.
var rebinds rebindCache

func (c *rebindCache) get(query string) string {
	c.mu.RLock()
	out, ok := c.m[query]
	c.mu.RUnlock()
	if ok {
		return out
	}
	out = rebind(query)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]string)
	}
	if len(c.m) >= rebindCacheSize {
		clear(c.m)
	}
	c.m[query] = out
	c.mu.Unlock()
	return out
}

// rebind is Rebind without its cache.
func rebind(q string) string {
	// First pass: the ? outside literals, and whether a $n is there.
	marks := 0
	for i := 0; i < len(q); {
		switch {
		case q[i] == '?':
			marks++
			i++
			continue
		case isParam(q, i):
			return q
		}
		i = skipToken(q, i)
	}
	if marks == 0 {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 2*marks)
	n, from := 0, 0
	for i := 0; i < len(q); {
		if q[i] != '?' {
			i = skipToken(q, i)
			continue
		}
		b.WriteString(q[from:i])
		if i+1 < len(q) && q[i+1] == '?' {
			b.WriteByte('?') // ?? is a literal ?
			i += 2
		} else {
			n++
			b.WriteByte('$')
			writeInt(&b, n)
			i++
		}
		from = i
	}
	b.WriteString(q[from:])
	return b.String()
}

// isParam reports whether a $n parameter starts at q[i] (as skipToken
// reads it: a $ not inside a word, followed by a digit).
func isParam(q string, i int) bool {
	return q[i] == '$' && (i == 0 || !isWordByte(q[i-1])) && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9'
}

func writeInt(b *strings.Builder, n int) {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	b.Write(buf[i:])
}
