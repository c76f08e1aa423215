package pgdriver

import "strings"

// txControl returns the first statement of query that would begin, end
// or leave the transaction, or open, release or roll back to a savepoint
// (its first words, upper case: "COMMIT", "ROLLBACK TO" ...), or "" when
// there is none. It reads query as PostgreSQL splits it into statements:
// semicolons and keywords inside comments (-- and nested /* */), string
// constants ('...', E'...' with backslash escapes, $tag$...$tag$) and
// quoted identifiers do not count. A caller's statement inside an Update
// closure must not do any of this: the transaction is the store's
// (driver.Writer.CallerSQL).
func txControl(query string) string {
	start := 0
	for i := 0; i <= len(query); {
		if i == len(query) || query[i] == ';' {
			if kw := txControlKeyword(query[start:i]); kw != "" {
				return kw
			}
			i++
			start = i
			continue
		}
		i = skipToken(query, i)
	}
	return ""
}

// skipToken returns the index just past the comment, string constant,
// quoted identifier or single byte at query[i].
func skipToken(q string, i int) int {
	switch {
	case strings.HasPrefix(q[i:], "--"):
		if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
			return i + j + 1
		}
		return len(q)
	case strings.HasPrefix(q[i:], "/*"):
		depth := 0
		for j := i; j < len(q); {
			switch {
			case strings.HasPrefix(q[j:], "/*"):
				depth++
				j += 2
			case strings.HasPrefix(q[j:], "*/"):
				depth--
				j += 2
				if depth == 0 {
					return j
				}
			default:
				j++
			}
		}
		return len(q)
	case q[i] == '\'':
		// E'...' (the E just before, not part of a longer word) takes
		// backslash escapes.
		escapes := i > 0 && (q[i-1] == 'E' || q[i-1] == 'e') && (i < 2 || !isWordByte(q[i-2]))
		for j := i + 1; j < len(q); j++ {
			switch {
			case escapes && q[j] == '\\':
				j++
			case q[j] == '\'':
				if j+1 < len(q) && q[j+1] == '\'' {
					j++
					continue
				}
				return j + 1
			}
		}
		return len(q)
	case q[i] == '"':
		for j := i + 1; j < len(q); j++ {
			if q[j] == '"' {
				if j+1 < len(q) && q[j+1] == '"' {
					j++
					continue
				}
				return j + 1
			}
		}
		return len(q)
	case q[i] == '$' && (i == 0 || !isWordByte(q[i-1])):
		// $tag$ ... $tag$ (tag empty or an identifier); $1 is a
		// parameter.
		j := i + 1
		for j < len(q) && isWordByte(q[j]) && !(j == i+1 && q[j] >= '0' && q[j] <= '9') {
			j++
		}
		if j < len(q) && q[j] == '$' {
			tag := q[i : j+1]
			if k := strings.Index(q[j+1:], tag); k >= 0 {
				return j + 1 + k + len(tag)
			}
			return len(q)
		}
		return i + 1
	}
	return i + 1
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// txControlKeyword returns the transaction control stmt (one statement,
// comments included) is, or "".
func txControlKeyword(stmt string) string {
	words := firstWords(stmt, 2)
	if len(words) == 0 {
		return ""
	}
	switch words[0] {
	case "BEGIN", "START", "COMMIT", "END", "ABORT", "SAVEPOINT", "RELEASE":
		return words[0]
	case "ROLLBACK":
		if len(words) > 1 && words[1] == "TO" {
			return "ROLLBACK TO"
		}
		return "ROLLBACK"
	case "PREPARE":
		if len(words) > 1 && words[1] == "TRANSACTION" {
			return "PREPARE TRANSACTION"
		}
	}
	return ""
}

// firstWords returns up to n words of stmt, upper case, skipping white
// space and comments; it stops at anything else.
func firstWords(stmt string, n int) []string {
	var words []string
	for i := 0; i < len(stmt) && len(words) < n; {
		c := stmt[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(stmt[i:], "--") || strings.HasPrefix(stmt[i:], "/*"):
			i = skipToken(stmt, i)
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(stmt) && isWordByte(stmt[j]) {
				j++
			}
			words = append(words, strings.ToUpper(stmt[i:j]))
			i = j
		default:
			return words
		}
	}
	return words
}
