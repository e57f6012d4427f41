package adapters

import (
	"fmt"
	"io"
)

// Secret holds a provider key's credential inside the adapters tree. It
// prints as [REDACTED] with every fmt verb (%v, %+v, %#v, %s, %q, %x, %d
// ...) and as "[REDACTED]" in JSON, so that a stray log line, error text or
// status dump of a config value never leaks it. The plaintext sits behind a
// *string: when a Secret is an unexported field of a struct that fmt prints
// by reflection (fmt calls no methods on unexported fields), fmt shows an
// address, never the value (it dereferences pointers to structs, arrays,
// slices and maps only). Reveal returns the value for the one place that
// must send it upstream: the request being built.
type Secret struct{ p *string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{p: &s} }

// Reveal returns the plaintext. Callers must not log it.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// IsSet reports whether a value is present.
func (s Secret) IsSet() bool { return s.p != nil && *s.p != "" }

const redacted = "[REDACTED]"

func (s Secret) String() string   { return redacted }
func (s Secret) GoString() string { return redacted }

// Format redacts under every verb and flag, not only those fmt routes
// through String.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalJSON never emits the value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
