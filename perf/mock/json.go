package mock

import (
	"errors"
	"strconv"
)

// Minimal JSON reading and writing: enough to pick a few fields out of a request body
// without decoding it, and to escape the few strings the mock echoes back. Values are
// returned as sub-slices of the input; string values keep their escapes, which is what an
// echo into another JSON document needs.
//
// The scanner checks structure (strings, brackets, commas, colons, literals) but not
// everything: bracket kinds inside skipped values are not matched and numbers are not
// validated. That is enough to reject truncated or garbled bodies in tests.

var errJSON = errors.New("mock: malformed JSON")

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string that starts at b[i] == '"'.
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1, nil
		case '\\':
			i++
		}
	}
	return 0, errJSON
}

// skipValue returns the index just past the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		return skipNested(b, i)
	case 't':
		return skipLiteral(b, i, "true")
	case 'f':
		return skipLiteral(b, i, "false")
	case 'n':
		return skipLiteral(b, i, "null")
	}
	start := i
	for i < len(b) && isNumberByte(b[i]) {
		i++
	}
	if i == start {
		return 0, errJSON
	}
	return i, nil
}

// skipNested skips an object or array iteratively, so hostile nesting cannot grow the stack.
func skipNested(b []byte, i int) (int, error) {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			end, err := skipString(b, i)
			if err != nil {
				return 0, err
			}
			i = end
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
		i++
	}
	return 0, errJSON
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, errJSON
	}
	return i + len(lit), nil
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// objectScanner walks the fields of one JSON object.
//
//	var o objectScanner
//	o.init(b)
//	for key, val, ok := o.next(); ok; key, val, ok = o.next() { ... }
//	if o.err != nil { ... }
type objectScanner struct {
	b    []byte
	i    int
	n    int
	done bool
	err  error
}

// init positions the scanner on the object b, which may carry surrounding whitespace.
func (o *objectScanner) init(b []byte) {
	*o = objectScanner{b: b}
	o.i = skipWS(b, 0)
	if o.i >= len(b) || b[o.i] != '{' {
		o.err = errJSON
		return
	}
	o.i++
}

// next returns the next field. key is the raw key without quotes; val is the raw value.
func (o *objectScanner) next() (key, val []byte, ok bool) {
	if o.err != nil || o.done {
		return nil, nil, false
	}
	b := o.b
	i := skipWS(b, o.i)
	if i < len(b) && b[i] == '}' {
		o.i = i + 1
		o.done = true
		return nil, nil, false
	}
	if o.n > 0 {
		if i >= len(b) || b[i] != ',' {
			return o.fail()
		}
		i = skipWS(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		return o.fail()
	}
	end, err := skipString(b, i)
	if err != nil {
		return o.fail()
	}
	key = b[i+1 : end-1]
	i = skipWS(b, end)
	if i >= len(b) || b[i] != ':' {
		return o.fail()
	}
	i = skipWS(b, i+1)
	end, err = skipValue(b, i)
	if err != nil {
		return o.fail()
	}
	o.i = end
	o.n++
	return key, b[i:end], true
}

func (o *objectScanner) fail() ([]byte, []byte, bool) {
	o.err = errJSON
	return nil, nil, false
}

// finish checks that only whitespace follows the object; call it after next returned false.
func (o *objectScanner) finish() error {
	if o.err != nil {
		return o.err
	}
	if !o.done || skipWS(o.b, o.i) != len(o.b) {
		return errJSON
	}
	return nil
}

// arrayScanner walks the elements of one JSON array.
type arrayScanner struct {
	b    []byte
	i    int
	n    int
	done bool
	err  error
}

func (a *arrayScanner) init(b []byte) {
	*a = arrayScanner{b: b}
	a.i = skipWS(b, 0)
	if a.i >= len(b) || b[a.i] != '[' {
		a.err = errJSON
		return
	}
	a.i++
}

func (a *arrayScanner) next() (val []byte, ok bool) {
	if a.err != nil || a.done {
		return nil, false
	}
	b := a.b
	i := skipWS(b, a.i)
	if i < len(b) && b[i] == ']' {
		a.i = i + 1
		a.done = true
		return nil, false
	}
	if a.n > 0 {
		if i >= len(b) || b[i] != ',' {
			a.err = errJSON
			return nil, false
		}
		i = skipWS(b, i+1)
	}
	end, err := skipValue(b, i)
	if err != nil {
		a.err = errJSON
		return nil, false
	}
	a.i = end
	a.n++
	return b[i:end], true
}

// stringContents returns the raw contents of a JSON string value (escapes kept) and
// whether v is a string at all.
func stringContents(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// appendEscaped appends s escaped as the contents of a JSON string (no quotes).
func appendEscaped[T ~string | ~[]byte](dst []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

func appendInt(dst []byte, n int) []byte {
	return strconv.AppendInt(dst, int64(n), 10)
}
