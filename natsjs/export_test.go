package natsjs

// SanitizeToken lets the external tests check how a value is escaped in
// a subject.
var SanitizeToken = sanitizeToken
