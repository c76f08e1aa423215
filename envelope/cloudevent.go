package envelope

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
)

// ToCloudEvent converts e to sdk-go's event.Event. The position travels as
// a decimal string (CloudEvents integers are 32-bit), streamversion as an
// Integer.
func (e Event) ToCloudEvent() event.Event {
	ce := event.New(SpecVersion)
	ctx := &event.EventContextV1{
		ID:         e.ID,
		Type:       e.Type,
		Source:     types.URIRef{},
		Extensions: make(map[string]any, 5+len(e.Extensions)),
	}
	ctx.Source = types.URIRef{URL: verbatimURL(e.Source)}
	if e.Stream != "" {
		s := e.Stream
		ctx.Subject = &s
	}
	if e.HasTime() {
		ctx.Time = &types.Timestamp{Time: e.Time.UTC()}
	}
	if e.DataContentType != "" {
		ct := e.DataContentType
		ctx.DataContentType = &ct
	}
	if e.DataSchema != "" {
		ctx.DataSchema = &types.URI{URL: verbatimURL(e.DataSchema)}
	}
	if e.Tenant != "" {
		ctx.Extensions[ExtTenant] = e.Tenant
	}
	if e.StreamVersion > 0 {
		ctx.Extensions[ExtStreamVersion] = int32(e.StreamVersion)
	}
	if e.Position > 0 {
		ctx.Extensions[ExtPosition] = strconv.FormatInt(e.Position, 10)
	}
	if e.CorrelationID != "" {
		ctx.Extensions[ExtCorrelationID] = e.CorrelationID
	}
	if e.CausationID != "" {
		ctx.Extensions[ExtCausationID] = e.CausationID
	}
	if len(e.Tags) > 0 {
		ctx.Extensions[ExtTags] = EncodeTags(e.Tags)
	}
	for k, v := range e.Extensions {
		ctx.Extensions[k] = v
	}
	ce.Context = ctx
	if e.Data != nil {
		ce.DataEncoded = e.Data
		ce.DataBase64 = !e.IsJSON()
	}
	return ce
}

// verbatimURL returns s parsed, or, when the parsed URL would not print
// back as s (an upper-case scheme, a space, non-ASCII text), a URL that
// prints s unchanged: the scheme as written and the rest kept opaque. The
// attribute then survives ToCloudEvent -> FromCloudEvent byte for byte.
func verbatimURL(s string) url.URL {
	u, err := url.Parse(s)
	if err == nil && u.String() == s {
		return *u
	}
	if err == nil && u.Scheme != "" && len(s) > len(u.Scheme) && strings.EqualFold(s[:len(u.Scheme)], u.Scheme) && s[len(u.Scheme)] == ':' {
		return url.URL{Scheme: s[:len(u.Scheme)], Opaque: s[len(u.Scheme)+1:]}
	}
	return url.URL{Opaque: s}
}

// FromCloudEvent converts an sdk-go event to an Event and validates it
// (maxData as in Validate).
func FromCloudEvent(ce event.Event, maxData int) (Event, error) {
	if ce.SpecVersion() != SpecVersion {
		return Event{}, invalid("specversion", "%q is not supported: only %s", truncate(ce.SpecVersion()), SpecVersion)
	}
	e := Event{
		ID:              ce.ID(),
		Source:          ce.Source(),
		Type:            ce.Type(),
		Stream:          ce.Subject(),
		DataContentType: ce.DataContentType(),
		DataSchema:      ce.DataSchema(),
		Data:            ce.Data(),
	}
	if t := ce.Time(); !t.IsZero() {
		e.Time = t.UTC()
	} else if ctx, ok := ce.Context.(*event.EventContextV1); ok && ctx.Time != nil {
		e.TimeSet = true // the instant 0001-01-01T00:00:00Z, given
	}
	if e.Data != nil && e.IsJSON() {
		// sdk-go keeps JSON data as it arrived, white space included:
		// store it compacted like every other way in.
		c, err := compactJSON(e.Data)
		if err != nil {
			return Event{}, invalid("data", "content type %s but data is not valid JSON: %v", e.contentTypeOrDefault(), err)
		}
		e.Data = c
	}
	for k, v := range ce.Extensions() {
		var err error
		switch k {
		case ExtTenant:
			e.Tenant, err = types.ToString(v)
		case ExtCorrelationID:
			e.CorrelationID, err = types.ToString(v)
		case ExtCausationID:
			e.CausationID, err = types.ToString(v)
		case ExtStreamVersion:
			e.StreamVersion, err = toInt64(v)
		case ExtPosition:
			e.Position, err = toInt64(v)
		case ExtTags:
			var tv string
			if tv, err = types.ToString(v); err == nil {
				if e.Tags, err = DecodeTags(tv); err != nil {
					return Event{}, err
				}
			}
		default:
			if !ValidExtensionName(k) {
				return Event{}, badExtensionName(k)
			}
			if e.Extensions == nil {
				e.Extensions = make(map[string]any)
			}
			e.Extensions[k], err = extensionValue(v)
		}
		if err != nil {
			return Event{}, invalid(k, "%v", err)
		}
	}
	if err := e.Validate(maxData); err != nil {
		return Event{}, err
	}
	return e, nil
}

func toInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	default:
		return 0, fmt.Errorf("not an integer: %T", v)
	}
}

// extensionValue maps sdk-go's canonical extension values to the ones Event
// keeps: string, int32, bool.
func extensionValue(v any) (any, error) {
	switch x := v.(type) {
	case string, int32, bool:
		return x, nil
	case time.Time, types.Timestamp, types.URI, types.URIRef, []byte:
		return types.Format(x)
	default:
		c, err := types.Validate(v)
		if err != nil {
			return nil, err
		}
		switch y := c.(type) {
		case string, int32, bool:
			return y, nil
		default:
			return types.Format(y)
		}
	}
}
