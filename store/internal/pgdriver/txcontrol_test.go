package pgdriver

import "testing"

// TestTxControl: transaction control is found in any statement of a
// query, however spelled, and never inside comments, string constants,
// dollar quotes or quoted identifiers, nor in statements that merely
// contain the words.
func TestTxControl(t *testing.T) {
	for q, want := range map[string]string{
		"COMMIT":                                 "COMMIT",
		"  commit work ;":                        "COMMIT",
		"END":                                    "END",
		"abort":                                  "ABORT",
		"ROLLBACK":                               "ROLLBACK",
		"ROLLBACK TO a":                          "ROLLBACK TO",
		"rollback transaction to savepoint a":    "ROLLBACK",
		"BEGIN":                                  "BEGIN",
		"START TRANSACTION":                      "START",
		"SAVEPOINT x":                            "SAVEPOINT",
		"RELEASE SAVEPOINT x":                    "RELEASE",
		"PREPARE TRANSACTION 'x'":                "PREPARE TRANSACTION",
		"/* c */ -- d\n ROLLBACK":                "ROLLBACK",
		"/* a /* nested */ still */ COMMIT":      "COMMIT",
		"INSERT INTO t VALUES (1); COMMIT":       "COMMIT",
		"SELECT 1;;\n\tcommit;":                  "COMMIT",
		"INSERT INTO t VALUES ('a;'); END":       "END",
		"SELECT $1; ROLLBACK":                    "ROLLBACK",
		"SELECT 'it''s'; COMMIT":                 "COMMIT",
		"SELECT E'\\';'; COMMIT":                 "COMMIT",
		"":                                       "",
		";":                                      "",
		"SELECT 1":                               "",
		"INSERT INTO t VALUES ('; COMMIT')":      "",
		"INSERT INTO t VALUES ('x'';COMMIT')":    "",
		"SELECT E'\\'; COMMIT'":                  "",
		"SELECT $$; COMMIT$$":                    "",
		"SELECT $tag$ ; COMMIT $tag$":            "",
		"SELECT \"a;COMMIT\" FROM t":             "",
		"SELECT 1 -- ; COMMIT":                   "",
		"SELECT 1 /* ; COMMIT */":                "",
		"SELECT 1 /* /* ; */ COMMIT */":          "",
		"UPDATE t SET commit = 1":                "",
		"SELECT begin_at, \"end\" FROM t":        "",
		"PREPARE q AS SELECT 1":                  "",
		"CREATE TABLE rollback_log (x int)":      "",
		"INSERT INTO t VALUES ($1); SELECT $2":   "",
		"SELECT 'unterminated; COMMIT":           "",
		"SELECT $$ unterminated; COMMIT":         "",
		"/* unterminated ; COMMIT":               "",
		"DO $$BEGIN PERFORM 1; END$$":            "",
		"SELECT 1; DO $$BEGIN COMMIT; END$$":     "",
		"SELECT x$y; COMMIT":                     "COMMIT",
		"SELECT ÿ$$; COMMIT":                     "COMMIT",
		"WITH a AS (SELECT 1) SELECT * FROM a":   "",
		"(SELECT 1); COMMIT":                     "COMMIT",
		"ROLLBACK PREPARED 'x'":                  "ROLLBACK",
		"commit prepared 'x'":                    "COMMIT",
		"\ufeffCOMMIT":                           "",
		"SELECT 1; /* c */ savepoint s":          "SAVEPOINT",
		"INSERT INTO t VALUES (e'\\\\'); COMMIT": "COMMIT",
	} {
		if got := txControl(q); got != want {
			t.Errorf("txControl(%q) = %q, want %q", q, got, want)
		}
	}
}
