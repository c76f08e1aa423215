package sqlitedriver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/eventlite/eventlite/envelope"
)

// selectAttrs reads the four attributes most events leave empty
// (dataschema, correlationid, causationid and the other extensions) as
// one column: NULL when all four are empty, else the four joined by NUL
// bytes (extensions empty when NULL). Every column a read fetches costs
// the driver a lock of the connection and a conversion, so one column in
// place of four makes a read of the log about a fifth faster. A NUL
// separates them unambiguously: envelope refuses control characters in
// string attributes, and the extensions' JSON escapes them.
const selectAttrs = `CASE WHEN data_schema = '' AND correlation_id = '' AND causation_id = '' AND extensions IS NULL THEN NULL
	ELSE data_schema || char(0) || correlation_id || char(0) || causation_id || char(0) || coalesce(extensions, '') END`

// splitAttrs fills e's dataschema, correlationid, causationid and other
// extensions from a non-NULL selectAttrs column.
func splitAttrs(b []byte, e *envelope.Event) error {
	f := bytes.SplitN(b, []byte{0}, 4)
	if len(f) != 4 {
		return fmt.Errorf("attributes column has %d parts, want 4", len(f))
	}
	e.DataSchema, e.CorrelationID, e.CausationID = string(f[0]), string(f[1]), string(f[2])
	if len(f[3]) > 0 {
		if err := decodeExtensions(f[3], e); err != nil {
			return fmt.Errorf("extensions: %w", err)
		}
	}
	return nil
}

// decodeExtensions restores the extension values' CloudEvents types:
// JSON numbers are int32 (validation only admits those), the rest as JSON.
func decodeExtensions(b []byte, e *envelope.Event) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	e.Extensions = make(map[string]any, len(raw))
	for k, v := range raw {
		var x any
		d := json.NewDecoder(strings.NewReader(string(v)))
		d.UseNumber()
		if err := d.Decode(&x); err != nil {
			return err
		}
		if n, ok := x.(json.Number); ok {
			i, err := n.Int64()
			if err != nil {
				return err
			}
			x = int32(i)
		}
		e.Extensions[k] = x
	}
	return nil
}
