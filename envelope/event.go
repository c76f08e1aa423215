package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// SpecVersion is the CloudEvents version eventlite reads and writes.
const SpecVersion = "1.0"

// Names of eventlite's CloudEvents extension attributes.
const (
	ExtStreamVersion = "streamversion"
	ExtPosition      = "position"
	ExtTenant        = "tenant"
	ExtCorrelationID = "correlationid"
	ExtCausationID   = "causationid"
)

// Limits that validation enforces.
const (
	// DefaultMaxDataBytes is the default limit on an event's data as
	// stored (after JSON compaction), inclusive. It keeps every event
	// publishable through a broker with default settings (NATS's default
	// max payload is 1 MiB, headers included).
	DefaultMaxDataBytes = 512 << 10
	// MaxStreamBytes is the longest stream id, in bytes.
	MaxStreamBytes = 255
	// MaxAttributeBytes is the longest value of any other string
	// attribute (id, source, type, dataschema, extensions), in bytes.
	MaxAttributeBytes = 1024
	// MaxStreamVersion caps a stream: versions are CloudEvents Integers.
	MaxStreamVersion = 1<<31 - 1
	// MaxPosition is the highest global position a store hands out,
	// 2^63-2: one below the largest 64-bit integer, so that the position
	// after it (where a reader resumes) still fits. A store refuses an
	// append past it, and a restore's floor beyond it.
	MaxPosition = 1<<63 - 2
	// DefaultMaxEventBytes is the default limit on a whole event: its data
	// plus, for each attribute, len("ce-") + len(name) + len(value) + 4,
	// as NATS and HTTP binary mode carry it (see EventBytes). It leaves 8
	// KiB of NATS's default 1 MiB max payload for the transport's own
	// headers, so a stored event can always be published.
	DefaultMaxEventBytes = 1<<20 - 8<<10
	// MaxDataDepth is how deeply JSON data may nest, counted within the
	// data: 1 for [] or {}, 2 for [[]], and so on.
	MaxDataDepth = 1000
	// ReservedTypePrefix begins the types of the store's own events.
	// Callers cannot append an event of such a type.
	ReservedTypePrefix = "eventlite."
)

// Limits are the size limits that validation enforces.
type Limits struct {
	// MaxDataBytes limits the data as stored, inclusive. 0 means
	// DefaultMaxDataBytes; negative means no limit.
	MaxDataBytes int
	// MaxEventBytes limits the whole event as EventBytes measures it,
	// inclusive. 0 means DefaultMaxEventBytes, or the data limit when that
	// is larger (the data limit is never more than the event limit);
	// negative means no limit.
	MaxEventBytes int
}

func (l Limits) resolve() (data, event int) {
	data, event = l.MaxDataBytes, l.MaxEventBytes
	if data == 0 {
		data = DefaultMaxDataBytes
	}
	if event == 0 {
		switch {
		case data < 0:
			event = -1
		case data > DefaultMaxEventBytes:
			event = data
		default:
			event = DefaultMaxEventBytes
		}
	}
	return data, event
}

// DefaultContentType is given to events that name no datacontenttype.
const DefaultContentType = "application/json"

// Event is one CloudEvents 1.0 event as eventlite stores it. The core
// attributes and eventlite's extensions are typed fields; any other
// extension lives in Extensions. ToCloudEvent and FromCloudEvent convert
// to and from sdk-go's event.Event without loss.
//
// Data holds the encoded data as stored: compacted JSON for a JSON content
// type, raw bytes otherwise. It is decoded only when asked (Registry.Decode,
// DecodeData).
type Event struct {
	ID     string // "id"; a monotonic ULID when left empty
	Source string // "source", a URI-reference
	Type   string // "type"
	// Stream is the stream id, carried as the CloudEvents "subject".
	Stream string
	// Time is the "time" attribute, kept to the nanosecond. A zero Time
	// with TimeSet false means unset: Prepare makes it now, and encoders
	// leave the attribute out. See TimeSet for the instant
	// 0001-01-01T00:00:00Z.
	Time time.Time
	// TimeSet marks a zero Time as given: the instant 0001-01-01T00:00:00Z,
	// which time.Time{} cannot tell from unset. It matters only when
	// Time.IsZero(); decoders and the store set it only then, so an event
	// compares equal however it arrived. Use HasTime to ask whether an
	// event has a time.
	TimeSet         bool
	DataContentType string // "datacontenttype"; application/json when empty
	DataSchema      string // "dataschema", a URI
	Data            []byte

	Tenant        string // "tenant" extension
	StreamVersion int64  // "streamversion": the stream's version after this event, set by the store
	Position      int64  // "position": the global log position, set by the store
	CorrelationID string // "correlationid" extension
	CausationID   string // "causationid" extension

	// Tags are the event's tags, in the caller's order, kept byte for
	// byte: at most MaxTags, each 1 to MaxTagBytes bytes of UTF-8 without
	// control characters or surrounding white space, none twice (see
	// ValidateTags). A query selects events by them. CloudEvents carry
	// them as the one string extension ExtTags (see EncodeTags).
	Tags []string

	// Extensions holds any other extension attribute. Values are string,
	// int32 or bool (CloudEvents' JSON types); URI, timestamp and binary
	// extensions are carried in their string form.
	Extensions map[string]any
}

// New returns an event of the given type whose data is v encoded as JSON.
// A []byte or json.RawMessage v is taken as already-encoded JSON.
func New(eventType string, v any) (Event, error) {
	e := Event{Type: eventType, DataContentType: DefaultContentType}
	switch d := v.(type) {
	case nil:
	case json.RawMessage:
		e.Data = d
	case []byte:
		e.Data = d
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return Event{}, &InvalidError{Index: -1, Field: "data", Reason: "cannot encode as JSON: " + err.Error()}
		}
		e.Data = b
	}
	return e, nil
}

// HasTime reports whether the event has a "time" attribute: a Time that is
// not zero, or the zero instant marked by TimeSet.
func (e *Event) HasTime() bool { return e.TimeSet || !e.Time.IsZero() }

// Clone returns a copy of e that shares no memory with it.
func (e Event) Clone() Event {
	if e.Data != nil {
		e.Data = bytes.Clone(e.Data)
	}
	if e.Extensions != nil {
		e.Extensions = maps.Clone(e.Extensions)
	}
	if e.Tags != nil {
		e.Tags = slices.Clone(e.Tags)
	}
	return e
}

// IsJSON reports whether the event's data is JSON, judged by its content
// type (empty, application/json, text/json or any +json type).
func (e *Event) IsJSON() bool { return IsJSONContentType(e.DataContentType) }

// IsJSONContentType reports whether a datacontenttype denotes JSON data.
func IsJSONContentType(ct string) bool {
	if ct == "" || ct == DefaultContentType {
		return true
	}
	mt := ct
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// Prepare readies a new event for appending: it fills the id (a monotonic
// ULID), the time (now, UTC) and the content type (application/json) when
// they are empty, compacts JSON data, and validates the result with
// maxData as the data limit (0 means DefaultMaxDataBytes) and the default
// event limit (see Limits).
func (e *Event) Prepare(now time.Time, maxData int) error {
	return e.PrepareLimits(now, Limits{MaxDataBytes: maxData})
}

// PrepareLimits is Prepare with both limits given.
func (e *Event) PrepareLimits(now time.Time, l Limits) error {
	if e.ID == "" {
		e.ID = ulid.Make().String()
	}
	if !e.HasTime() {
		e.Time = now
	}
	e.Time = e.Time.UTC()
	if e.DataContentType == "" {
		e.DataContentType = DefaultContentType
	}
	if e.Data != nil && e.IsJSON() {
		c, err := compactJSON(e.Data)
		if err != nil {
			return &InvalidError{Index: -1, Field: "data", Reason: "content type " + e.DataContentType + " but data is not valid JSON: " + err.Error()}
		}
		e.Data = c
		// Compaction just proved the data is JSON: skip the second pass.
		return e.validate(l, false)
	}
	return e.validate(l, true)
}

// compactJSON returns data compacted, or data itself when it holds no
// insignificant white space. It fails when data is not valid JSON, or
// is JSON that eventlite refuses (see checkJSONText).
func compactJSON(data []byte) ([]byte, error) {
	spaces, ok := scanData(data)
	switch {
	case !ok:
		// Refused, or not decided in one pass: the full checks word
		// the error.
		return compactJSONSlow(data)
	case spaces == 0:
		return data, nil
	}
	return compactSpaces(data, spaces), nil
}

// compactJSONSlow is compactJSON in three passes: checkJSONText, then
// json.Valid (json.Unmarshal for its error), or json.Compact when data
// holds white space. Its errors are the ones users see.
func compactJSONSlow(data []byte) ([]byte, error) {
	if err := checkJSONText(data, MaxDataDepth); err != nil {
		return nil, err
	}
	if !bytes.ContainsAny(data, " \t\r\n") {
		if !json.Valid(data) {
			var v any
			err := json.Unmarshal(data, &v)
			if err == nil {
				err = errNotJSON
			}
			return nil, err
		}
		return data, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(data))
	if err := json.Compact(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var errNotJSON = errors.New("not valid JSON")

// ValidateTenant checks a tenant name: 1-64 characters of A-Z a-z 0-9 . _ -
func ValidateTenant(tenant string) error {
	if !validTenant(tenant) {
		return &InvalidError{Index: -1, Field: "tenant", Reason: strconv.Quote(truncate(tenant)) + " is not 1-64 characters of A-Z a-z 0-9 . _ -"}
	}
	return nil
}

// validTenant reports whether tenant is 1-64 bytes of A-Z a-z 0-9 . _ -:
// the regular expression ^[A-Za-z0-9._-]{1,64}$ without the regexp
// engine, which every event of every append ran (validate checks the
// event's tenant).
func validTenant(tenant string) bool {
	if len(tenant) == 0 || len(tenant) > 64 {
		return false
	}
	for i := 0; i < len(tenant); i++ {
		if !tenantByte[tenant[i]] {
			return false
		}
	}
	return true
}

// tenantByte marks the bytes a tenant name may hold.
var tenantByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	return t
}()

// ValidateStream checks a stream id: 1-255 bytes of valid UTF-8, no
// control character (Unicode Cc), no leading or trailing white space
// (CloudEvents SDKs trim the subject).
func ValidateStream(stream string) error {
	switch {
	case stream == "":
		return invalid("stream", "stream id is empty")
	case len(stream) > MaxStreamBytes:
		return invalid("stream", "stream id is %d bytes, longer than %d", len(stream), MaxStreamBytes)
	}
	if reason := badText(stream); reason != "" {
		return invalid("stream", "stream id %s", reason)
	}
	return nil
}

// badText says what is wrong with an attribute value, or returns "": it
// must be valid UTF-8 without control characters (Unicode Cc: U+0000-001F
// and U+007F-009F), and must not start or end with white space. Transports
// carry attributes as headers, which cannot hold such values, and
// CloudEvents SDKs trim white space.
func badText(v string) string {
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return fmt.Sprintf("contains the control character U+%04X at byte %d: remove it", c, i)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Sprintf("is not valid UTF-8 (byte %d)", i)
		}
		if r >= 0x80 && r <= 0x9f {
			return fmt.Sprintf("contains the control character U+%04X at byte %d: remove it", r, i)
		}
		i += size
	}
	if v == "" {
		return ""
	}
	first, _ := utf8.DecodeRuneInString(v)
	last, _ := utf8.DecodeLastRuneInString(v)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return strconv.Quote(truncate(v)) + " starts or ends with white space: trim it"
	}
	return ""
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Validate checks the event against the CloudEvents 1.0 spec and
// eventlite's own rules. maxData is the data limit in bytes (0 means
// DefaultMaxDataBytes, negative means no limit); the event limit is the
// default (see Limits). It returns an *InvalidError or a *TooLargeError.
func (e *Event) Validate(maxData int) error {
	return e.validate(Limits{MaxDataBytes: maxData}, true)
}

// ValidateLimits is Validate with both limits given.
func (e *Event) ValidateLimits(l Limits) error { return e.validate(l, true) }

// validate is Validate; checkJSON false skips re-parsing JSON data that
// the caller already proved valid.
func (e *Event) validate(l Limits, checkJSON bool) error {
	if err := checkString("id", e.ID, true); err != nil {
		return err
	}
	if err := checkSource(e.Source); err != nil {
		return err
	}
	if err := checkString("type", e.Type, true); err != nil {
		return err
	}
	if e.HasTime() {
		// RFC 3339 writes four-digit years; a time outside them (possible
		// after converting an offset time to UTC) could not be read back.
		if y := e.Time.UTC().Year(); y < 0 || y > 9999 {
			return invalid("time", "%s is outside the years 0000-9999 that RFC 3339 can express", e.Time.UTC().Format(time.RFC3339Nano))
		}
	}
	if e.Stream != "" {
		if err := ValidateStream(e.Stream); err != nil {
			return err
		}
	}
	if e.DataContentType != "" {
		if err := validateContentType(e.DataContentType); err != nil {
			return err
		}
	}
	if e.DataSchema != "" {
		if err := checkString("dataschema", e.DataSchema, true); err != nil {
			return err
		}
		if u, err := url.Parse(e.DataSchema); err != nil || !u.IsAbs() {
			return invalid("dataschema", "%q is not an absolute URI", truncate(e.DataSchema))
		}
	}
	if e.Tenant != "" {
		if err := ValidateTenant(e.Tenant); err != nil {
			return err
		}
	}
	if e.StreamVersion < 0 || e.StreamVersion > MaxStreamVersion {
		return invalid(ExtStreamVersion, "%d is outside 0..%d", e.StreamVersion, MaxStreamVersion)
	}
	if e.Position < 0 {
		return invalid(ExtPosition, "%d is negative", e.Position)
	}
	if err := checkString(ExtCorrelationID, e.CorrelationID, false); err != nil {
		return err
	}
	if err := checkString(ExtCausationID, e.CausationID, false); err != nil {
		return err
	}
	if len(e.Tags) > 0 {
		if err := ValidateTags(e.Tags); err != nil {
			return err
		}
	}
	if len(e.Extensions) > 0 { // ranging over a nil map still costs an iterator
		for name, v := range e.Extensions {
			if err := validateExtension(name, v); err != nil {
				return err
			}
		}
	}
	maxData, maxEvent := l.resolve()
	if maxData > 0 && len(e.Data) > maxData {
		return &TooLargeError{Index: -1, Field: "data", Size: len(e.Data), Limit: maxData}
	}
	if maxEvent > 0 {
		if n := e.EventBytes(); n > maxEvent {
			return &TooLargeError{Index: -1, Field: "event", Size: n, Limit: maxEvent}
		}
	}
	if checkJSON && e.Data != nil && e.IsJSON() {
		// One pass accepts valid data; the slow checks word the error.
		if _, ok := scanData(e.Data); !ok {
			if err := checkJSONText(e.Data, MaxDataDepth); err != nil {
				return invalid("data", "%v", err)
			}
			if !json.Valid(e.Data) {
				return invalid("data", "content type %s but data is not valid JSON", e.contentTypeOrDefault())
			}
		}
	}
	return nil
}

// Widest values of the attributes the store assigns, counted as such by
// EventBytes whatever they are before the event is stored.
const (
	maxStreamVersionDigits = 10 // 2^31-1
	maxPositionDigits      = 19 // 2^63-1
)

// rfc3339NanoLen is len(t.UTC().Format(time.RFC3339Nano)) for a year of
// four digits, without formatting.
func rfc3339NanoLen(t time.Time) int {
	n := len("2006-01-02T15:04:05Z")
	if ns := t.Nanosecond(); ns > 0 {
		digits := 9
		for ns%10 == 0 {
			ns /= 10
			digits--
		}
		n += 1 + digits
	}
	return n
}

// EventBytes measures the event as the event limit counts it: the data's
// length plus, for each attribute, len("ce-") + len(name) + len(value) +
// 4 (a header's ": " and line end), which is how binary mode carries it
// on NATS and HTTP. streamversion and position count at their widest (10
// and 19 digits), set or not: the store assigns them.
func (e *Event) EventBytes() int {
	n := len(e.Data)
	attr := func(name string, vlen int) { n += 3 + len(name) + vlen + 4 }
	attr("specversion", len(SpecVersion))
	attr("id", len(e.ID))
	attr("source", len(e.Source))
	attr("type", len(e.Type))
	if e.Stream != "" {
		attr("subject", len(e.Stream))
	}
	if e.HasTime() {
		attr("time", rfc3339NanoLen(e.Time))
	}
	if e.DataContentType != "" {
		attr("datacontenttype", len(e.DataContentType))
	}
	if e.DataSchema != "" {
		attr("dataschema", len(e.DataSchema))
	}
	if e.Tenant != "" {
		attr(ExtTenant, len(e.Tenant))
	}
	attr(ExtStreamVersion, maxStreamVersionDigits)
	attr(ExtPosition, maxPositionDigits)
	if e.CorrelationID != "" {
		attr(ExtCorrelationID, len(e.CorrelationID))
	}
	if e.CausationID != "" {
		attr(ExtCausationID, len(e.CausationID))
	}
	if len(e.Tags) > 0 {
		attr(ExtTags, encodedTagsLen(e.Tags))
	}
	if len(e.Extensions) == 0 {
		return n
	}
	for name, v := range e.Extensions {
		switch x := v.(type) {
		case string:
			attr(name, len(x))
		case bool:
			attr(name, len(strconv.FormatBool(x)))
		case int32:
			var buf [12]byte
			attr(name, len(strconv.AppendInt(buf[:0], int64(x), 10)))
		default:
			attr(name, len(fmt.Sprint(x)))
		}
	}
	return n
}

func (e *Event) contentTypeOrDefault() string {
	if e.DataContentType == "" {
		return DefaultContentType
	}
	return e.DataContentType
}

func checkString(field, v string, required bool) error {
	switch {
	case v == "" && required:
		return invalid(field, "required and empty")
	case len(v) > MaxAttributeBytes:
		return &TooLargeError{Index: -1, Field: field, Size: len(v), Limit: MaxAttributeBytes}
	}
	if reason := badText(v); reason != "" {
		return invalid(field, "%s", reason)
	}
	return nil
}

// checkedSource is the last source that checkSource accepted, or nil.
// The events of a batch, and of one producer, mostly share their source,
// and its check parses it as a URI-reference (url.Parse, which
// allocates): a source equal to this one passes without it. The check
// depends on the string alone, so the result is the same; only accepted
// sources are kept, each as a copy of its own, which a caller cannot
// change under it.
var checkedSource atomic.Pointer[string]

// checkSource checks a source attribute: checkSourceFull, skipped for
// the source it last accepted.
func checkSource(src string) error {
	if p := checkedSource.Load(); p != nil && *p == src {
		return nil
	}
	if err := checkSourceFull(src); err != nil {
		return err
	}
	c := strings.Clone(src)
	checkedSource.Store(&c)
	return nil
}

// errNoSource says how to give an event its source: the store keeps input
// exactly or refuses it, so it never fills one in.
const errNoSource = `required and empty: set Event.Source to a URI-reference naming the producer (for example "/orders"), or give the Registry a default that Encode applies (Registry.SetSource)`

// checkSourceFull checks a source attribute: a non-empty attribute
// string that is a URI-reference.
func checkSourceFull(src string) error {
	if src == "" {
		return invalid("source", "%s", errNoSource)
	}
	if err := checkString("source", src, true); err != nil {
		return err
	}
	if _, err := url.Parse(src); err != nil {
		return invalid("source", "not a URI-reference: %v", err)
	}
	return nil
}

// validateContentType checks an RFC 2046 media type: type "/" subtype
// with optional parameters. A plain type/subtype of token characters
// (application/json, the usual case) passes without the general parse,
// which allocates.
func validateContentType(ct string) error {
	if plainMediaType(ct) {
		return nil
	}
	return validateContentTypeFull(ct)
}

// plainMediaType reports whether ct is type "/" subtype, both non-empty
// runs of RFC 2045 token characters (printable ASCII but space and
// tspecials), without parameters, at most MaxAttributeBytes long: a
// value that validateContentTypeFull
// accepts, decided in one pass without allocating. For anything else it
// returns false and leaves the decision, and the error, to
// validateContentTypeFull.
func plainMediaType(ct string) bool {
	if len(ct) > MaxAttributeBytes {
		return false
	}
	slash := -1
	for i := 0; i < len(ct); i++ {
		c := ct[i]
		if c == '/' {
			if slash >= 0 {
				return false
			}
			slash = i
			continue
		}
		if !mediaTokenByte[c] {
			return false
		}
	}
	return slash > 0 && slash < len(ct)-1
}

// mediaTokenByte marks RFC 2045 token characters: printable ASCII but
// space and the tspecials ()<>@,;:\"/[]?=.
var mediaTokenByte = func() (t [256]bool) {
	for c := 0x21; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`()<>@,;:\"/[]?=`, rune(c))
	}
	return t
}()

// validateContentTypeFull is validateContentType without its fast path,
// which the tests compare it with.
func validateContentTypeFull(ct string) error {
	if err := checkString("datacontenttype", ct, true); err != nil {
		return err
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !strings.Contains(mt, "/") || strings.HasPrefix(mt, "/") || strings.HasSuffix(mt, "/") {
		return invalid("datacontenttype", "%q is not an RFC 2046 media type such as application/json", truncate(ct))
	}
	return nil
}

// reserved names are the context attributes that are not extensions.
var reserved = map[string]bool{
	"specversion": true, "id": true, "source": true, "type": true,
	"subject": true, "time": true, "datacontenttype": true, "dataschema": true,
	"data": true, "data_base64": true,
	ExtStreamVersion: true, ExtPosition: true, ExtTenant: true,
	ExtCorrelationID: true, ExtCausationID: true, ExtTags: true,
}

// ValidExtensionName reports whether name is a legal CloudEvents extension
// attribute name: lower-case ASCII letters and digits.
func ValidExtensionName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// badExtensionName is the error for an extension name that is not
// lower-case ASCII letters and digits. Its Field is the name (shortened
// when long), or "extension" when the name is empty.
func badExtensionName(name string) *InvalidError {
	if name == "" {
		return invalid("extension", "an extension attribute has an empty name")
	}
	return invalid(truncate(name), "extension names are lower-case ASCII letters and digits")
}

func validateExtension(name string, v any) error {
	if !ValidExtensionName(name) {
		return badExtensionName(name)
	}
	if reserved[name] {
		return invalid(name, "is a context attribute or an eventlite extension, not a free extension")
	}
	switch x := v.(type) {
	case string:
		return checkString(name, x, false)
	case bool, int32:
		return nil
	default:
		return invalid(name, "extension value of type %T: use a string, a bool or a 32-bit integer", v)
	}
}
