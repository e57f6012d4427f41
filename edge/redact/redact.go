// Package redact removes credentials from text that is about to be logged:
// the values of credential headers and anything shaped like a token. It is
// for cold paths (error lines of the HTTP server library, diagnostics), never
// the request path.
package redact

import (
	"regexp"
	"strings"
	"sync"
)

// Marker replaces every removed value.
const Marker = "[REDACTED]"

// credentialHeader matches a credential header and its value as it appears
// in raw or %q-escaped request dumps: the value runs to the end of the line,
// an escaped CR/LF (`\r`, `\n`) or a closing quote. No word boundary: in
// an escaped dump the name follows the letter n of `\n`.
var credentialHeader = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(proxy-authorization|authorization|x-api-key|api-key|x-goog-api-key|cookie|set-cookie|x-amz-security-token|x-gw-admin-key|x-api-key-admin)(\s*[:=]\s*)([^\r\n"\\]*)`)
})

// tokenShaped matches values that look like secrets wherever they appear:
// bearer credentials, provider-style keys (sk-, sk-ant-, gw-, AKIA…), JWTs,
// PEM private keys and any long unbroken run of token characters.
//
// Both compile on first use: redaction runs on cold paths only, and the
// counted repetitions made these init-time compiles cost every start
// ~60 KB of heap and a fraction of a millisecond.
var tokenShaped = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bbearer\s+[^\s"\\,;]+` +
		`|\b(?:sk|pk|rk|gw|key)[-_][A-Za-z0-9_\-]{6,}` +
		`|\bAKIA[0-9A-Z]{12,}` +
		`|\beyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*` +
		`|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)` +
		`|[A-Za-z0-9_\-+/=]{32,}`)
})

// String returns s with credential header values and token-shaped values
// replaced by Marker.
func String(s string) string {
	if s == "" {
		return s
	}
	s = credentialHeader().ReplaceAllString(s, "${1}${2}"+Marker)
	return tokenShaped().ReplaceAllStringFunc(s, func(m string) string {
		if m == Marker || strings.HasSuffix(m, Marker) {
			return m
		}
		if len(m) > 7 && strings.EqualFold(m[:6], "bearer") {
			return m[:7] + Marker
		}
		return Marker
	})
}
