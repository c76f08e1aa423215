package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/eventlite/eventlite/store"
)

// ConditionHeader carries an append's condition (see parseCondition).
const ConditionHeader = "Eventlite-Condition"

// queryJSON is a query as the HTTP API takes it: the items of
// store.Query. No items: every event.
type queryJSON struct {
	Items []queryItemJSON `json:"items"`
}

type queryItemJSON struct {
	Types []string `json:"types,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

// conditionJSON is a condition in JSON: a query and the position after
// which a matching event fails the append ("0", or left out: any).
type conditionJSON struct {
	Items []queryItemJSON `json:"items"`
	After json.Number     `json:"after,omitempty"`
}

func (q queryJSON) query() store.Query {
	var out store.Query
	for _, it := range q.Items {
		out.Items = append(out.Items, store.QueryItem{Types: it.Types, Tags: it.Tags})
	}
	return out
}

// decodeStrict decodes one JSON value into v, refusing unknown members
// and anything after it.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errTrailing
	}
	return nil
}

type trailingError struct{}

func (trailingError) Error() string { return "more than one JSON value" }

var errTrailing = trailingError{}

// invalidQuery is a 400 naming the parameter, header or body member.
func invalidQuery(name, field, format string, args ...any) *Problem {
	p := problemf(name, format, args...)
	p.Field = field
	return p
}

// paramQuery reads a one-item query from tag= and type= (repeatable),
// and whether tag= was given: without a tag, type= stays the log read's
// type filter.
func paramQuery(q url.Values) (store.Query, bool, *Problem) {
	tags := q["tag"]
	if len(tags) == 0 {
		return store.Query{}, false, nil
	}
	query := store.Query{Items: []store.QueryItem{{Types: q["type"], Tags: tags}}}
	if err := query.Validate(); err != nil {
		p := invalidQuery("invalid-parameter", "tag", "tag/type: %v", err)
		p.Reason = err.Error()
		return store.Query{}, true, p
	}
	if q.Get("stream_prefix") != "" || q.Get("correlationid") != "" {
		return store.Query{}, true, invalidQuery("invalid-parameter", "tag", "a read by tag takes no stream_prefix or correlationid")
	}
	return query, true, nil
}

// parseCondition reads an append's condition from the Eventlite-Condition
// header: a form-encoded query of one item (tag=T&tag=U&type=Y&after=P,
// percent-encoded as a query string is), or a JSON object for several
// items ({"items":[{"types":[...],"tags":[...]}],"after":"P"}). No
// header: no condition.
func parseCondition(hd http.Header) (*store.Condition, *Problem) {
	vs := hd.Values(ConditionHeader)
	switch len(vs) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, invalidPrecondition(ConditionHeader, "send one %s header", ConditionHeader)
	}
	v := strings.TrimSpace(vs[0])
	var c store.Condition
	if strings.HasPrefix(v, "{") {
		var cj conditionJSON
		if err := decodeStrict([]byte(v), &cj); err != nil {
			return nil, invalidPrecondition(ConditionHeader, "%s is not a condition object (%v): send {\"items\":[{\"types\":[...],\"tags\":[...]}],\"after\":\"P\"}", ConditionHeader, err)
		}
		c.Query = queryJSON{Items: cj.Items}.query()
		if cj.After != "" {
			n, err := strconv.ParseInt(cj.After.String(), 10, 64)
			if err != nil || n < 0 {
				return nil, invalidPrecondition(ConditionHeader, "%s: after %q is not a position", ConditionHeader, cj.After)
			}
			c.After = n
		}
	} else {
		form, err := url.ParseQuery(v)
		if err != nil {
			return nil, invalidPrecondition(ConditionHeader, "%s is malformed (%v): send tag=T&type=Y&after=P, percent-encoded", ConditionHeader, err)
		}
		for k := range form {
			if k != "tag" && k != "type" && k != "after" {
				return nil, invalidPrecondition(ConditionHeader, "%s: unknown member %q: send tag=T&type=Y&after=P", ConditionHeader, k)
			}
		}
		if len(form["tag"]) > 0 || len(form["type"]) > 0 {
			c.Query = store.Query{Items: []store.QueryItem{{Types: form["type"], Tags: form["tag"]}}}
		}
		if a := form["after"]; len(a) > 0 {
			n, err := strconv.ParseInt(a[0], 10, 64)
			if err != nil || n < 0 || len(a) > 1 {
				return nil, invalidPrecondition(ConditionHeader, "%s: after=%q is not one position", ConditionHeader, a[0])
			}
			c.After = n
		}
	}
	if err := c.Query.Validate(); err != nil {
		p := invalidPrecondition(ConditionHeader, "%s: %v", ConditionHeader, err)
		p.Reason = err.Error()
		return nil, p
	}
	return &c, nil
}

// readQuery answers POST .../query: the tenant's events matching the
// query in the body, paged, long-polled and live as GET .../events is.
func (h *Handler) readQuery(w http.ResponseWriter, r *http.Request, tenant string) {
	body, p := readBody(r)
	if p != nil {
		p.Tenant = tenant
		writeProblem(w, p)
		return
	}
	var qj queryJSON
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeStrict(body, &qj); err != nil {
			p := problemf("invalid-body", "the body is not a query (%v): send {\"items\":[{\"types\":[...],\"tags\":[...]}]}", err)
			p.Tenant, p.Field = tenant, "body"
			writeProblem(w, p)
			return
		}
	}
	query := qj.query()
	if err := query.Validate(); err != nil {
		p := problemFor(err, tenant, "", nil)
		writeProblem(w, p)
		return
	}
	q := r.URL.Query()
	for _, k := range []string{"tag", "type", "stream_prefix", "correlationid"} {
		if q.Has(k) {
			writeProblem(w, invalidQuery("invalid-parameter", k, "%s=: a query read takes its filter from the body only", k))
			return
		}
	}
	from, p := queryInt(q, "from", 0, 0)
	if p == nil {
		var limit int
		limit, p = queryLimit(q)
		if p == nil {
			var wait int64
			wait, p = queryInt(q, "wait", 0, MaxWait)
			if p == nil {
				h.readLogPage(w, r, tenant, from, limit, time.Duration(wait)*time.Second, &query)
				return
			}
		}
	}
	writeProblem(w, p)
}
