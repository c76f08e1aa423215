// Package envelope is eventlite's event type: a CloudEvents 1.0 event with
// eventlite's extensions (streamversion, position, tenant, correlationid,
// causationid), its validation, size limits, the structured JSON encoding
// and a typed payload registry.
//
// It knows no database: the same events are stored on a SQLite file and in
// a PostgreSQL schema.
//
// It is the leaf of eventlite: every other package imports it and it
// imports none of them.
//
//	e, _ := envelope.New("order.placed", OrderPlaced{ID: "o-1", Total: 42})
//	// store.Append fills the id (a ULID), time, tenant, stream, version
//	// and position.
//
// Guarantees:
//   - Validate refuses what the CloudEvents 1.0 spec refuses (including what
//     sdk-go's own validation lets through) and eventlite's own limits, with
//     an *InvalidError (field and reason) or a *TooLargeError.
//   - Input is kept exactly or refused: a time is kept to the nanosecond
//     in years 0000-9999 (TimeSet marks the zero instant as given); every
//     string attribute refuses control characters (Unicode Cc), leading or
//     trailing white space and invalid UTF-8; the structured decoders
//     refuse escaped lone surrogates, two top-level members of one name,
//     and JSON data nested deeper than MaxDataDepth; an event is at most
//     DefaultMaxEventBytes (see Limits and EventBytes) unless told
//     otherwise. DecodeStoredJSON reads eventlite's own stored encoding
//     back without applying these input rules again.
//   - JSON data is stored compacted, so an event encodes on one line and a
//     retry compares equal byte for byte.
//   - Decoding never panics; decode -> encode -> decode is stable.
//   - Event converts to and from sdk-go's event.Event without loss.
package envelope
