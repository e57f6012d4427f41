package resources

// Secret holds credential material (provider api keys, HMAC secrets, guardrail
// backend keys). It prints as [REDACTED] through fmt, %v, %+v, %#v and JSON so
// that a stray log line or status dump never leaks it. Reveal returns the value
// for the one place that must send it upstream.
type Secret struct{ v string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{v: s} }

// Reveal returns the plaintext. Callers must not log it.
func (s Secret) Reveal() string { return s.v }

// IsSet reports whether a value is present.
func (s Secret) IsSet() bool { return s.v != "" }

func (s Secret) String() string   { return "[REDACTED]" }
func (s Secret) GoString() string { return "[REDACTED]" }

// MarshalJSON never emits the value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"[REDACTED]"`), nil }
