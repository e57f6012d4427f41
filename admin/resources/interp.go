package resources

import (
	"errors"
	"strings"
)

// Env looks up an environment variable. ok is false when it is unset.
type Env func(name string) (value string, ok bool)

// interpError names the variable only; the value never enters an error text.
type interpError struct{ msg string }

func (e *interpError) Error() string { return e.msg }

var errUnclosed = errors.New("unclosed \"${\" in value")

// Interpolate resolves ${VAR} references in s.
//
//   - ${VAR} is replaced by the variable's value; an unset or empty variable is an error.
//   - $$ yields a literal $ (so "$${x}" yields "${x}" without a lookup).
//   - $VAR without braces and a lone $ are kept as written.
//   - An unclosed "${" or an empty "${}" is an error; there are no ":-" or ":?" fallbacks,
//     a name containing them is rejected as an invalid name.
//
// changed reports whether s held any reference (used to warn about literal credentials).
func Interpolate(s string, env Env) (out string, refs int, err error) {
	if strings.IndexByte(s, '$') < 0 {
		return s, 0, nil // fast path - nothing to do
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", refs, errUnclosed
			}
			name := s[i+2 : i+2+end]
			if name == "" {
				return "", refs, &interpError{"empty \"${}\" in value"}
			}
			if strings.HasPrefix(name, "request.") {
				return "", refs, &interpError{"\"${" + name + "}\" is a per-request variable; write it as $${" + name + "} in the file"}
			}
			if !validVarName(name) {
				return "", refs, &interpError{"invalid variable name \"" + name + "\" in ${...} (fallbacks such as ${VAR:-default} are not supported)"}
			}
			v, ok := env(name)
			if !ok {
				return "", refs, &interpError{"environment variable \"" + name + "\" is not set"}
			}
			if v == "" {
				return "", refs, &interpError{"environment variable \"" + name + "\" is empty"}
			}
			refs++
			b.WriteString(v)
			i += 2 + end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), refs, nil
}

func validVarName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
