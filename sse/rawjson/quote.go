package rawjson

import "unicode/utf8"

// AppendQuote appends s to dst as a JSON string literal and returns the
// extended buffer. The output is minimal but valid: only '"', '\\' and control
// characters are escaped (as \n, \r, \t, \b, \f or \u00XX); '<', '>', '&',
// U+2028 and U+2029 are kept as they are. Each byte of invalid UTF-8 becomes
// \ufffd, as in encoding/json. dst may be nil.
func AppendQuote(dst []byte, s string) []byte { return appendQuote(dst, s) }

// AppendQuoteBytes is AppendQuote for a byte slice.
func AppendQuoteBytes(dst, s []byte) []byte { return appendQuote(dst, s) }

const hexDigits = "0123456789abcdef"

func appendQuote[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	i := 0
	for {
		j := indexSpecial(s, i)
		dst = append(dst, s[i:j]...)
		if j == len(s) {
			return append(dst, '"')
		}
		c := s[j]
		if c >= 0x80 {
			if k := utf8Run(s, j); k > j {
				dst = append(dst, s[j:k]...)
				i = k
				continue
			}
			dst = append(dst, `\ufffd`...)
			i = j + 1
			continue
		}
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i = j + 1
	}
}

// AppendUnquote appends the decoded content of the JSON string literal quoted
// (quotes included, nothing around them) to dst. It decodes every escape,
// \uXXXX surrogate pairs included, exactly as encoding/json does: a lone or
// mismatched surrogate escape and each byte of invalid UTF-8 become U+FFFD.
// On a malformed literal (missing quotes, bad escape, raw control character or
// quote) it returns dst unchanged and ErrInvalidString.
func AppendUnquote(dst, quoted []byte) ([]byte, error) {
	n := len(quoted)
	if n < 2 || quoted[0] != '"' || quoted[n-1] != '"' {
		return dst, ErrInvalidString
	}
	raw := quoted[1 : n-1]
	orig := len(dst)
	i := 0
	for {
		j := indexSpecial(raw, i)
		dst = append(dst, raw[i:j]...)
		if j == len(raw) {
			return dst, nil
		}
		switch c := raw[j]; {
		case c == '\\':
			r, k := unescape(raw, j)
			if k == 0 {
				return dst[:orig], ErrInvalidString
			}
			dst = utf8.AppendRune(dst, r)
			i = j + k
		case c >= 0x80:
			if k := utf8Run(raw, j); k > j {
				dst = append(dst, raw[j:k]...)
				i = k
			} else {
				dst = append(dst, "\uFFFD"...)
				i = j + 1
			}
		default: // a control character or an unescaped quote
			return dst[:orig], ErrInvalidString
		}
	}
}

// StringEquals reports whether the JSON string literal quoted (quotes
// included) decodes to s, without allocating. Decoding follows
// AppendUnquote; a malformed literal equals nothing.
func StringEquals(quoted []byte, s string) bool {
	n := len(quoted)
	if n < 2 || quoted[0] != '"' || quoted[n-1] != '"' {
		return false
	}
	raw := quoted[1 : n-1]
	// Fast path - a plain literal compares byte for byte.
	j := indexSpecial(raw, 0)
	if j == len(raw) {
		return string(raw) == s
	}
	// Slow path - compare segment by segment as AppendUnquote would produce.
	if len(s) < j || string(raw[:j]) != s[:j] {
		return false
	}
	p := j // bytes of s matched so far
	i := j
	var buf [utf8.UTFMax]byte
	for {
		var seg []byte
		switch c := raw[j]; {
		case c == '\\':
			r, k := unescape(raw, j)
			if k == 0 {
				return false
			}
			seg = utf8.AppendRune(buf[:0], r)
			i = j + k
		case c >= 0x80:
			if k := utf8Run(raw, j); k > j {
				seg = raw[j:k]
				i = k
			} else {
				seg = append(buf[:0], "\uFFFD"...)
				i = j + 1
			}
		default:
			return false
		}
		if len(s)-p < len(seg) || string(seg) != s[p:p+len(seg)] {
			return false
		}
		p += len(seg)
		j = indexSpecial(raw, i)
		if len(s)-p < j-i || string(raw[i:j]) != s[p:p+j-i] {
			return false
		}
		p += j - i
		if j == len(raw) {
			return p == len(s)
		}
	}
}

// unescape decodes the escape sequence at raw[j] == '\\' and returns the rune
// and the number of bytes consumed, or 0 if the escape is malformed.
// Surrogates follow encoding/json: a high surrogate escape directly followed
// by a low surrogate escape forms one rune; any other surrogate escape decodes
// to U+FFFD on its own.
func unescape(raw []byte, j int) (rune, int) {
	if j+1 >= len(raw) {
		return 0, 0
	}
	switch raw[j+1] {
	case '"':
		return '"', 2
	case '\\':
		return '\\', 2
	case '/':
		return '/', 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r := hex4(raw, j+2)
		if r < 0 {
			return 0, 0
		}
		if r < 0xD800 || r >= 0xE000 {
			return r, 6
		}
		if r < 0xDC00 && j+12 <= len(raw) && raw[j+6] == '\\' && raw[j+7] == 'u' {
			if r2 := hex4(raw, j+8); r2 >= 0xDC00 && r2 < 0xE000 {
				return 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00), 12
			}
		}
		return utf8.RuneError, 6
	}
	return 0, 0
}

// hex4 decodes the four hex digits at s[i:i+4], or returns -1.
func hex4(s []byte, i int) rune {
	if len(s)-i < 4 {
		return -1
	}
	var r rune
	for _, c := range s[i : i+4] {
		v := hexVal[c]
		if v < 0 {
			return -1
		}
		r = r<<4 | rune(v)
	}
	return r
}

var hexVal = func() (t [256]int8) {
	for c := range t {
		switch {
		case c >= '0' && c <= '9':
			t[c] = int8(c - '0')
		case c >= 'a' && c <= 'f':
			t[c] = int8(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			t[c] = int8(c - 'A' + 10)
		default:
			t[c] = -1
		}
	}
	return t
}()
