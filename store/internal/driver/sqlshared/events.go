package sqlshared

import (
	"encoding/json"
	"strings"

	"github.com/eventlite/eventlite/envelope"
	"github.com/eventlite/eventlite/store/internal/driver"
)

// DecodeExtensions restores the extension values' CloudEvents types from
// their stored JSON object: JSON numbers are int32 (validation only
// admits those), the rest as JSON.
func DecodeExtensions(b []byte, e *envelope.Event) error {
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
	driver.LiftTags(e)
	return nil
}
