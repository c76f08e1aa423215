package pgdriver

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sqliteColumns reads the columns that table has in the SQLite store after
// all its migrations (store/internal/sqlitedriver/migrations/*.sql): its CREATE TABLE and every
// ALTER TABLE ... ADD COLUMN.
func sqliteColumns(t *testing.T, table string) []string {
	t.Helper()
	files, err := filepath.Glob("../sqlitedriver/migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("the SQLite migrations: %v (%d files)", err, len(files))
	}
	slices.Sort(files)
	create := regexp.MustCompile(`(?s)CREATE TABLE ` + table + ` \((.*?)\n\)`)
	alter := regexp.MustCompile(`ALTER TABLE ` + table + ` ADD COLUMN (\w+)`)
	var cols []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := create.FindSubmatch(b); m != nil {
			for _, line := range strings.Split(string(m[1]), "\n") {
				w := strings.Fields(line)
				if len(w) == 0 || strings.HasPrefix(w[0], "--") {
					continue
				}
				switch strings.ToUpper(w[0]) {
				case "PRIMARY", "UNIQUE", "CHECK", "CONSTRAINT", "FOREIGN":
					continue
				}
				cols = append(cols, w[0])
			}
		}
		for _, m := range alter.FindAllSubmatch(b, -1) {
			cols = append(cols, string(m[1]))
		}
	}
	slices.Sort(cols)
	return cols
}

// TestSchemaMatchesSQLite: streams and events have the columns SQLite's
// store has after all its migrations, the key text columns compare
// bytewise (COLLATE "C"), times are BIGINT and data is bytea.
func TestSchemaMatchesSQLite(t *testing.T) {
	db := openTest(t, nil)
	ctx := context.Background()
	for _, table := range []string{"streams", "events"} {
		want := sqliteColumns(t, table)
		if len(want) < 5 {
			t.Fatalf("read %d SQLite columns of %s: %v", len(want), table, want)
		}
		rows, err := db.Pool().Query(ctx, `SELECT column_name, data_type, COALESCE(collation_name, '')
FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`, db.Schema(), table)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		types := map[string]string{}
		coll := map[string]string{}
		for rows.Next() {
			var name, typ, c string
			if err := rows.Scan(&name, &typ, &c); err != nil {
				t.Fatal(err)
			}
			got = append(got, name)
			types[name], coll[name] = typ, c
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s columns:\n got %v\nwant %v (SQLite's)", table, got, want)
		}
		for _, k := range []string{"tenant", "stream_id", "event_id", "type"} {
			if _, ok := types[k]; ok && coll[k] != "C" {
				t.Errorf("%s.%s collation %q, want C", table, k, coll[k])
			}
		}
		for name, typ := range types {
			if (strings.HasSuffix(name, "_at") || name == "time" || name == "position" || name == "version") && typ != "bigint" {
				t.Errorf("%s.%s is %s, want bigint", table, name, typ)
			}
		}
		if table == "events" && types["data"] != "bytea" {
			t.Errorf("events.data is %s, want bytea", types["data"])
		}
	}
}
