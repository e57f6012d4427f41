package multipart

import "bytes"

// maxBoundaryLen is RFC 2046 section 5.1.1's limit.
const maxBoundaryLen = 70

// isTokenChar reports whether c may appear in an RFC 2045 token
// (any CHAR except SPACE, CTLs and tspecials).
func isTokenChar(c byte) bool { return tokenTable[c] }

// isTSpecial reports whether c is an RFC 2045 tspecial.
func isTSpecial(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '@', ',', ';', ':', '\\', '"', '/', '[', ']', '?', '=':
		return true
	}
	return false
}

// isBChar reports whether c may appear in a boundary (RFC 2046 bchars).
func isBChar(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	switch c {
	case '\'', '(', ')', '+', '_', ',', '-', '.', '/', ':', '=', '?', ' ':
		return true
	}
	return false
}

var tokenTable = func() (t [256]bool) {
	for c := 0x21; c < 0x7f; c++ {
		t[c] = !isTSpecial(byte(c))
	}
	return t
}()

func isOWS(c byte) bool { return c == ' ' || c == '\t' }

func trimOWS(s []byte) []byte {
	for len(s) > 0 && isOWS(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isOWS(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// equalFold compares an ASCII byte string with a lower-case ASCII literal.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// params walks the `; key=value` list after a media type or disposition
// type. Values are token or quoted-string (RFC 2045 section 5.1, RFC 7578
// section 4.2); a quoted value is returned raw (without the quotes, escapes
// still in place) with quoted set, for appendUnquoted.
type params struct {
	s   []byte
	i   int
	bad bool
}

func (p *params) next() (key, val []byte, quoted, ok bool) {
	s, i := p.s, p.i
	for i < len(s) && isOWS(s[i]) {
		i++
	}
	if i == len(s) {
		return nil, nil, false, false
	}
	if s[i] != ';' {
		p.bad = true
		return nil, nil, false, false
	}
	i++
	for i < len(s) && isOWS(s[i]) {
		i++
	}
	if i == len(s) {
		// A trailing ';' is common (some clients write "form-data; name=x;");
		// accept it like mime.ParseMediaType does.
		p.i = i
		return nil, nil, false, false
	}
	k := i
	for i < len(s) && isTokenChar(s[i]) {
		i++
	}
	key = s[k:i]
	for i < len(s) && isOWS(s[i]) {
		i++
	}
	if len(key) == 0 || i == len(s) || s[i] != '=' {
		p.bad = true
		return nil, nil, false, false
	}
	i++
	for i < len(s) && isOWS(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '"' {
		i++
		v := i
		for {
			if i == len(s) {
				p.bad = true // unterminated quoted-string
				return nil, nil, false, false
			}
			c := s[i]
			if c == '"' {
				break
			}
			if c == '\\' && i+1 < len(s) {
				i += 2
				continue
			}
			if c == '\r' || c == '\n' || c == 0 {
				p.bad = true
				return nil, nil, false, false
			}
			i++
		}
		val, quoted = s[v:i], true
		i++
	} else {
		v := i
		for i < len(s) && isTokenChar(s[i]) {
			i++
		}
		if i == v {
			p.bad = true
			return nil, nil, false, false
		}
		val = s[v:i]
	}
	p.i = i
	return key, val, quoted, true
}

// appendUnquoted appends a quoted-string's content with its quoted-pairs
// resolved. Like mime.ParseMediaType, a backslash escapes only a tspecial
// (so a Windows path "C:\dir\f.wav" sent unescaped by an old browser keeps
// its backslashes).
func appendUnquoted(dst, v []byte) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) && isTSpecial(v[i+1]) {
			i++
			c = v[i]
		}
		dst = append(dst, c)
	}
	return dst
}

// AppendBoundary appends the boundary parameter of a multipart/form-data
// Content-Type value (RFC 7578 section 4.1, RFC 2046 section 5.1.1) to dst.
// The media type is matched case-insensitively; the boundary may be a token
// or a quoted-string; it must be 1..70 bchars not ending in a space.
func AppendBoundary(dst, contentType []byte) ([]byte, error) {
	s := trimOWS(contentType)
	end := bytes.IndexByte(s, ';')
	if end < 0 {
		end = len(s)
	}
	if !equalFold(trimOWS(s[:end]), "multipart/form-data") {
		return dst, malformed("content type is not multipart/form-data", -1)
	}
	p := params{s: s, i: end}
	var b []byte
	found := false
	start := len(dst)
	for {
		key, val, quoted, ok := p.next()
		if !ok {
			break
		}
		if !equalFold(key, "boundary") {
			continue
		}
		if found {
			return dst[:start], malformed("content type has two boundary parameters", -1)
		}
		found = true
		if quoted {
			dst = appendUnquoted(dst, val)
		} else {
			dst = append(dst, val...)
		}
		b = dst[start:]
	}
	if p.bad {
		return dst[:start], malformed("content type parameters are malformed", -1)
	}
	if !found {
		return dst, malformed("content type has no boundary parameter", -1)
	}
	if len(b) == 0 || len(b) > maxBoundaryLen || b[len(b)-1] == ' ' {
		return dst[:start], malformed("boundary must be 1 to 70 characters, not ending in a space", -1)
	}
	for _, c := range b {
		if !isBChar(c) {
			return dst[:start], malformed("boundary has a character RFC 2046 does not allow", -1)
		}
	}
	return dst, nil
}

// disposition is what a part's headers say about it. The byte slices point
// into the Reader's arena.
type disposition struct {
	name, filename, ctype span
	file, hasCType        bool
}

// span is a range of the Reader's arena; offsets survive the arena growing.
type span struct{ o, e int32 }

func (s span) get(arena []byte) []byte { return arena[s.o:s.e:s.e] }

// parseHeaders reads a part's header block (each line ending in CRLF, the
// blank line excluded) and appends the decoded name, filename and
// content type to arena. Obsolete line folding, bare CR or LF and other
// control characters are rejected rather than guessed at: two parsers that disagree on a header are
// how a guardrail gets bypassed.
func parseHeaders(block []byte, arena []byte, dash []byte, d *disposition) ([]byte, string) {
	seenCD, seenCT := false, false
	for len(block) > 0 {
		eol := bytes.IndexByte(block, '\n')
		if eol < 1 || block[eol-1] != '\r' {
			return arena, "part header line does not end in CRLF"
		}
		line := block[:eol-1]
		block = block[eol+1:]
		if len(line) == 0 || isOWS(line[0]) {
			return arena, "part header uses obsolete line folding"
		}
		if bytes.HasPrefix(line, dash) {
			return arena, "boundary inside part headers"
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return arena, "part header line has no name"
		}
		name := line[:colon]
		for _, c := range name {
			if !isTokenChar(c) {
				return arena, "part header name has an invalid character"
			}
		}
		val := trimOWS(line[colon+1:])
		for _, c := range val {
			// What net/textproto accepts in a value (RFC 7230
			// field-content): HTAB, SP, VCHAR and obs-text; no other
			// control character, DEL included.
			if c < ' ' && c != '\t' || c == 0x7f {
				return arena, "part header value has a control character"
			}
		}
		switch {
		case equalFold(name, "content-disposition"):
			if seenCD {
				return arena, "part has two Content-Disposition headers"
			}
			seenCD = true
			var msg string
			arena, msg = parseDisposition(val, arena, d)
			if msg != "" {
				return arena, msg
			}
		case equalFold(name, "content-type"):
			if seenCT {
				return arena, "part has two Content-Type headers"
			}
			seenCT = true
			o := len(arena)
			arena = append(arena, val...)
			d.ctype = span{int32(o), int32(len(arena))}
			d.hasCType = true
		}
	}
	if !seenCD {
		return arena, "part has no Content-Disposition header"
	}
	return arena, ""
}

// parseDisposition parses `form-data; name="..."; filename="..."` (RFC 7578
// section 4.2). filename* (RFC 5987/8187) wins over filename when its charset
// is UTF-8 or ISO-8859-1; with another charset it is ignored and the plain
// filename is used. Either one makes the part a file.
func parseDisposition(v []byte, arena []byte, d *disposition) ([]byte, string) {
	end := bytes.IndexByte(v, ';')
	if end < 0 {
		end = len(v)
	}
	if !equalFold(trimOWS(v[:end]), "form-data") {
		return arena, "part disposition is not form-data"
	}
	p := params{s: v, i: end}
	var haveName, haveFile, haveExt bool
	var nameO, nameE, fileO, fileE, extO, extE int
	for {
		key, val, quoted, ok := p.next()
		if !ok {
			break
		}
		switch {
		case equalFold(key, "name"):
			if haveName {
				return arena, "part has two name parameters"
			}
			haveName = true
			nameO = len(arena)
			arena = appendValue(arena, val, quoted)
			nameE = len(arena)
		case equalFold(key, "filename"):
			if haveFile {
				return arena, "part has two filename parameters"
			}
			haveFile = true
			fileO = len(arena)
			arena = appendValue(arena, val, quoted)
			fileE = len(arena)
		case equalFold(key, "filename*"):
			if haveExt {
				return arena, "part has two filename* parameters"
			}
			if quoted {
				return arena, "filename* must not be quoted"
			}
			haveExt = true
			o := len(arena)
			var good bool
			var msg string
			arena, good, msg = appendExtValue(arena, val)
			if msg != "" {
				return arena, msg
			}
			if good {
				extO, extE = o, len(arena)
			} else {
				extO, extE = -1, -1
			}
		case bytes.IndexByte(key, '*') >= 0:
			// name* and RFC 2231 continuations (filename*0=...): no client
			// sends them and parsers disagree on them (mime.ParseMediaType
			// lets name* override name), so a field could be "x" here and
			// "model" upstream.
			return arena, "part disposition has a parameter this gateway does not accept (name* or a continuation)"
		}
	}
	if p.bad {
		return arena, "part disposition parameters are malformed"
	}
	if !haveName || nameE == nameO {
		return arena, "part has no name"
	}
	d.name = span{int32(nameO), int32(nameE)}
	d.file = haveFile || haveExt
	switch {
	case haveExt && extO >= 0:
		d.filename = span{int32(extO), int32(extE)}
	case haveFile:
		d.filename = span{int32(fileO), int32(fileE)}
	}
	return arena, ""
}

func appendValue(dst, val []byte, quoted bool) []byte {
	if quoted {
		return appendUnquoted(dst, val)
	}
	return append(dst, val...)
}

// appendExtValue decodes an RFC 8187 ext-value (charset'language'pct-encoded)
// into UTF-8. good is false for a charset other than UTF-8 or ISO-8859-1
// (the caller then falls back to the plain filename); msg is set when the
// value is malformed.
func appendExtValue(dst, v []byte) (out []byte, good bool, msg string) {
	q1 := bytes.IndexByte(v, '\'')
	if q1 < 0 {
		return dst, false, "filename* has no charset"
	}
	q2 := bytes.IndexByte(v[q1+1:], '\'')
	if q2 < 0 {
		return dst, false, "filename* has no language delimiter"
	}
	charset := v[:q1]
	enc := v[q1+1+q2+1:]
	latin1 := equalFold(charset, "iso-8859-1")
	known := latin1 || equalFold(charset, "utf-8")
	// Decode even for an unknown charset: the escapes must still be valid.
	start := len(dst)
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		if c == '%' {
			if i+2 >= len(enc) {
				return dst[:start], false, "filename* has a malformed percent escape"
			}
			h, l := unhex(enc[i+1]), unhex(enc[i+2])
			if h < 0 || l < 0 {
				return dst[:start], false, "filename* has a malformed percent escape"
			}
			c = byte(h<<4 | l)
			i += 2
		} else if !isTokenChar(c) {
			return dst[:start], false, "filename* has a character that must be escaped"
		}
		if latin1 && c >= 0x80 {
			dst = append(dst, 0xc0|c>>6, 0x80|c&0x3f)
			continue
		}
		dst = append(dst, c)
	}
	if !known {
		return dst[:start], false, ""
	}
	return dst, true, ""
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
