// Package rawjson reads and rewrites top-level JSON members directly on the
// raw bytes, without decoding the document and without allocating.
//
// The gateway forwards request bodies and streamed chunks byte-for-byte and
// touches only a few top-level members (model, stream, stream_options,
// messages[i].role, usage, ...). Everything outside the touched members is
// copied verbatim, whitespace included.
//
// # Validation contract
//
// [Valid] performs full RFC 8259 validation, UTF-8 included; call it once on
// untrusted input. All other functions check the structure of the level they
// walk (braces, commas, colons, quoted keys, the literals and the number
// grammar of the values they step over, nothing but whitespace after the
// document) and skip nested objects, arrays and string contents by quote and
// bracket matching only. They never panic or read out of bounds, whatever the
// input, but on invalid JSON they may return a result rather than an error.
// On valid JSON they agree with encoding/json.
//
// # Duplicate keys
//
// encoding/json, like most parsers, lets the last occurrence of a duplicated
// key win. [Get], [GetPath] and [ScanTop] return the last occurrence; [Set],
// [SetString], [Delete] and [Rename] act on every occurrence, so an upstream
// can never parse a value other than the one gw policy saw. Two spellings of
// one name that differ in case ("model", "Model") are refused by
// [ValidNames]: parsers disagree on which one counts.
//
// # Editing
//
// [Set], [SetString], [SetIfAbsent], [Delete] and [Rename] append an edited
// copy of an object to dst (append style, dst may be nil) and leave every
// byte outside the edited members as it was. dst must not overlap the input.
//
// # Keys
//
// Keys are compared after unescaping and without case, as encoding/json
// matches a member to a struct field (Unicode simple folding): a key written
// "mod\u0065l", "Model" or "MODEL" equals "model" (fold.go says why). Keys
// given to this package should be valid UTF-8. An ASCII key without a
// backslash (every key the gateway uses) takes a fast path that compares
// ASCII spellings directly.
//
// # Values
//
// Values are returned as raw spans of the input: strings keep their quotes
// and escapes (see [AppendUnquote] and [StringEquals]), numbers keep their
// spelling. A span aliases the input, stays valid as long as the input is not
// modified, and has its capacity clipped so appending to it never overwrites
// the input.
package rawjson

import (
	"errors"
	"math/bits"
)

// Kind is the type of a JSON value, told by its first byte.
type Kind uint8

// Kinds of JSON values. The zero Kind is Invalid.
const (
	Invalid Kind = iota
	String
	Number
	Object
	Array
	True
	False
	Null
)

var kindNames = [...]string{"invalid", "string", "number", "object", "array", "true", "false", "null"}

// String returns the lower-case name of k.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// KindOf returns the kind of the raw value span raw, judged by its first byte
// only. It returns Invalid for an empty span or a span that starts with
// whitespace.
func KindOf(raw []byte) Kind {
	if len(raw) == 0 {
		return Invalid
	}
	return kindOfByte[raw[0]]
}

var kindOfByte = func() (t [256]Kind) {
	t['"'] = String
	t['-'] = Number
	for c := '0'; c <= '9'; c++ {
		t[c] = Number
	}
	t['{'] = Object
	t['['] = Array
	t['t'] = True
	t['f'] = False
	t['n'] = Null
	return t
}()

// Errors returned for malformed input. Callers compare with errors.Is.
var (
	ErrSyntax        = errors.New("rawjson: syntax error")
	ErrUnexpectedEnd = errors.New("rawjson: unexpected end of input")
	ErrNotObject     = errors.New("rawjson: not an object")
	ErrNotArray      = errors.New("rawjson: not an array")
	ErrInvalidString = errors.New("rawjson: invalid string literal")
	ErrEmptyValue    = errors.New("rawjson: empty raw value")
)

// Scanner positions are non-negative; these negative codes report failures
// without allocating an error on the way.
const (
	codeEOF    = -1
	codeSyntax = -2
)

func codeErr(code int) error {
	if code == codeEOF {
		return ErrUnexpectedEnd
	}
	return ErrSyntax
}

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(data []byte, i int) int {
	for i < len(data) {
		c := data[i]
		// Fast path - any byte above ' ' ends the run.
		if c > ' ' || (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
			return i
		}
		i++
	}
	return i
}

// skipString returns the index just past the closing quote of the string
// whose body starts at data[i] (just after the opening quote). It only matches
// quotes and escapes; the content is not validated.
func skipString(data []byte, i int) int {
	i, _ = scanString(data, i)
	return i
}

// scanString is skipString that also reports whether the body holds a
// backslash.
func scanString(data []byte, i int) (end int, esc bool) {
	for {
		// Fast path - while there is no quote or backslash: four words
		// (keys and most values end in them), then 32 bytes per step with
		// AVX2 (quoteBlocks), then eight at a time.
		if i+32 <= len(data) {
			for k := i; k < i+32; k += 8 {
				if m := quoteOrBackslashMask(load64(data, k)); m != 0 {
					i = k + bits.TrailingZeros64(m)>>3
					goto found
				}
			}
			i = quoteBlocks(data, i+32)
		}
		for i+8 <= len(data) {
			if m := quoteOrBackslashMask(load64(data, i)); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto found
			}
			i += 8
		}
		for ; i < len(data); i++ {
			if c := data[i]; c == '"' || c == '\\' {
				goto found
			}
		}
		return codeEOF, esc
	found:
		if data[i] == '"' {
			return i + 1, esc
		}
		esc = true
		i += 2 // a backslash escapes the next byte; \uXXXX digits are plain
	}
}

// skipContainer returns the index just past the object or array that starts
// at data[i]. It counts brackets and skips strings; it does not check that
// bracket kinds match or that the content is well-formed. No recursion: depth
// is unbounded and costs nothing.
func skipContainer(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch structural[data[i]] {
		case 0:
			i++
			continue
		case '"':
			i = skipString(data, i+1)
			if i < 0 {
				return i
			}
			continue
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return codeEOF
}

// structural maps the bytes skipContainer acts on: '"', openers to '{',
// closers to '}', everything else to 0.
var structural = func() (t [256]byte) {
	t['"'] = '"'
	t['{'], t['['] = '{', '{'
	t['}'], t[']'] = '}', '}'
	return t
}()

// skipLit returns the index past the literal lit at data[i], or a failure
// code.
func skipLit(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) {
		if string(data[i:]) == lit[:len(data)-i] {
			return codeEOF
		}
		return codeSyntax
	}
	if string(data[i:i+len(lit)]) != lit {
		return codeSyntax
	}
	return i + len(lit)
}

// skipNumber returns the index past the RFC 8259 number at data[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// What follows the number is the caller's business.
func skipNumber(data []byte, i int) int {
	n := len(data)
	if i < n && data[i] == '-' {
		i++
	}
	if i >= n {
		return codeEOF
	}
	switch c := data[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i = skipDigits(data, i+1)
	default:
		return codeSyntax
	}
	if i < n && data[i] == '.' {
		i++
		if i >= n {
			return codeEOF
		}
		if !isDigit(data[i]) {
			return codeSyntax
		}
		i = skipDigits(data, i+1)
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= n {
			return codeEOF
		}
		if !isDigit(data[i]) {
			return codeSyntax
		}
		i = skipDigits(data, i+1)
	}
	return i
}

func isDigit(c byte) bool { return c-'0' < 10 }

func skipDigits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

// skipValue returns the index past the value that starts exactly at data[i]
// and its kind, or a failure code. Literals and numbers are checked exactly;
// strings and containers are matched leniently (see the package comment).
func skipValue(data []byte, i int) (int, Kind) {
	if i >= len(data) {
		return codeEOF, Invalid
	}
	switch c := data[i]; c {
	case '"':
		return skipString(data, i+1), String
	case '{':
		return skipContainer(data, i), Object
	case '[':
		return skipContainer(data, i), Array
	case 't':
		return skipLit(data, i, "true"), True
	case 'f':
		return skipLit(data, i, "false"), False
	case 'n':
		return skipLit(data, i, "null"), Null
	default:
		return skipNumber(data, i), Number
	}
}

// endOfDocument checks that only whitespace follows data[i].
func endOfDocument(data []byte, i int) error {
	if skipWS(data, i) != len(data) {
		return ErrSyntax
	}
	return nil
}

// member is one parsed top-level member; all fields index the document.
type member struct {
	sep     int  // start of the bytes between the previous value (or '{') and the key
	key     int  // opening quote of the key
	keyEnd  int  // just past the closing quote of the key
	keyEsc  bool // the key is spelled with a backslash escape
	keyWide bool // the key holds a byte >= 0x80
	val     int  // first byte of the value
	valEnd  int  // just past the value
	kind    Kind
}

// objIter walks the members of an object. Use: if it.reset(data) { for
// it.next(&m) {...} }, then check it.err.
type objIter struct {
	data     []byte
	i        int // end of the last value, or open before the first member
	open     int // just past '{'
	firstKey int // opening quote of the first key
	n        int // members returned so far
	err      error
}

func (it *objIter) reset(data []byte) bool {
	*it = objIter{data: data}
	i := skipWS(data, 0)
	if i >= len(data) {
		it.err = ErrUnexpectedEnd
		return false
	}
	if data[i] != '{' {
		it.err = ErrNotObject
		return false
	}
	it.open = i + 1
	it.i = i + 1
	return true
}

func (it *objIter) fail(err error) bool {
	it.err = err
	return false
}

// next parses the next member into m. It returns false at the closing '}'
// (it.err == nil if only whitespace follows) or on malformed input
// (it.err != nil). It must not be called again after returning false.
func (it *objIter) next(m *member) bool {
	data := it.data
	i := skipWS(data, it.i)
	if i >= len(data) {
		return it.fail(ErrUnexpectedEnd)
	}
	c := data[i]
	if c == '}' {
		it.err = endOfDocument(data, i+1)
		return false
	}
	if it.n > 0 {
		if c != ',' {
			return it.fail(ErrSyntax)
		}
		i = skipWS(data, i+1)
		if i >= len(data) {
			return it.fail(ErrUnexpectedEnd)
		}
		c = data[i]
	}
	if c != '"' {
		return it.fail(ErrSyntax)
	}
	if it.n == 0 {
		it.firstKey = i
	}
	m.sep = it.i
	m.key = i
	j, esc, _, wide := scanName(data, i+1, false)
	if j < 0 {
		return it.fail(codeErr(j))
	}
	m.keyEnd = j
	m.keyEsc = esc
	m.keyWide = wide
	j = skipWS(data, j)
	if j >= len(data) {
		return it.fail(ErrUnexpectedEnd)
	}
	if data[j] != ':' {
		return it.fail(ErrSyntax)
	}
	j = skipWS(data, j+1)
	m.val = j
	var e int
	var kind Kind
	if j < len(data) && data[j] == '"' {
		// Fast path - string values are the most common; skip the dispatch.
		e, _ = scanString(data, j+1)
		kind = String
	} else {
		e, kind = skipValue(data, j)
	}
	if e < 0 {
		return it.fail(codeErr(e))
	}
	m.valEnd = e
	m.kind = kind
	it.i = e
	it.n++
	return true
}

// isFastKey reports whether key is ASCII without a backslash, so that a raw
// key spelled without escapes matches it only if the bytes are equal and a
// raw key spelled with escapes is strictly longer than it.
func isFastKey(key string) bool {
	i := 0
	// Fast path - eight bytes at a time (ScanTop checks every key per call).
	for ; i+8 <= len(key); i += 8 {
		w := load64(key, i)
		b := w ^ (lsb * '\\')
		if (w|((b-lsb)&^b))&msb != 0 {
			return false
		}
	}
	for ; i < len(key); i++ {
		if c := key[i]; c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// is reports whether the key of m unescapes to a name equal to key under
// folding (see fold.go); fast is isFastKey(key).
func (m *member) is(data []byte, key string, fast bool) bool {
	if fast && !m.keyEsc && !m.keyWide {
		// Fast path - an ASCII spelling compares byte for byte, or without
		// case when the lengths agree.
		raw := data[m.key+1 : m.keyEnd-1]
		return len(raw) == len(key) && (string(raw) == key || foldFirst(raw, key) && equalFoldASCII(raw, key))
	}
	return foldEqualQuoted(data[m.key:m.keyEnd], key)
}

// exact reports whether the key of m is spelled byte for byte as key.
func (m *member) exact(data []byte, key string) bool {
	return string(data[m.key+1:m.keyEnd-1]) == key
}

// Get returns the value of the top-level member key of the object data: the
// raw span within data (strings include their quotes), its kind and true.
// Names match without case, and if key occurs several times the last
// occurrence wins, as encoding/json decodes into a struct field.
// It returns false if key is absent, data is not an object, or the top level
// of data is malformed.
func Get(data []byte, key string) (val []byte, kind Kind, ok bool) {
	var it objIter
	if !it.reset(data) {
		return nil, Invalid, false
	}
	fast := isFastKey(key)
	var m member
	for it.next(&m) {
		if m.is(data, key, fast) {
			val, kind, ok = data[m.val:m.valEnd:m.valEnd], m.kind, true
		}
	}
	if it.err != nil {
		return nil, Invalid, false
	}
	return val, kind, ok
}

// GetPath follows keys through nested objects, as in
// GetPath(body, "stream_options", "include_usage"), with Get's rules at each
// level. With no keys it returns data without surrounding whitespace. The
// variadic slice does not escape, so a call with constant keys does not
// allocate.
func GetPath(data []byte, keys ...string) (val []byte, kind Kind, ok bool) {
	if len(keys) == 0 {
		i := skipWS(data, 0)
		e, kind := skipValue(data, i)
		if e < 0 || endOfDocument(data, e) != nil {
			return nil, Invalid, false
		}
		return data[i:e:e], kind, true
	}
	val = data
	for _, k := range keys {
		if val, kind, ok = Get(val, k); !ok {
			return nil, Invalid, false
		}
	}
	return val, kind, true
}

// ScanTop reads several top-level members of the object data in one pass:
// vals[i] is set to the raw value of keys[i] (last occurrence wins) or to nil
// if absent; KindOf(vals[i]) gives its kind. len(vals) must be >= len(keys).
// On malformed input every vals[i] is nil and the error is returned.
func ScanTop(data []byte, keys []string, vals [][]byte) error {
	if len(vals) < len(keys) {
		panic("BUG: rawjson.ScanTop: len(vals) < len(keys)")
	}
	vals = vals[:len(keys)]
	clear(vals)
	allFast := len(keys) <= 64
	var fast uint64 // bit k: keys[k] is a fast key; keys past 64 use the slow path
	for k, key := range keys {
		if k < 64 && isFastKey(key) {
			fast |= 1 << k
		} else {
			allFast = false
		}
	}
	var it objIter
	if !it.reset(data) {
		return it.err
	}
	var m member
	for it.next(&m) {
		if allFast && !m.keyEsc && !m.keyWide {
			// Fast path - m.is for fast keys and an ASCII spelling, inlined:
			// equal bytes or equal without case, tried only on keys of the
			// same length.
			raw := data[m.key+1 : m.keyEnd-1]
			for k, key := range keys {
				if len(key) == len(raw) && (string(raw) == key || foldFirst(raw, key) && equalFoldASCII(raw, key)) {
					vals[k] = data[m.val:m.valEnd:m.valEnd]
				}
			}
			continue
		}
		for k, key := range keys {
			if m.is(data, key, k < 64 && fast&(1<<k) != 0) {
				vals[k] = data[m.val:m.valEnd:m.valEnd]
			}
		}
	}
	if it.err != nil {
		clear(vals)
		return it.err
	}
	return nil
}

// ForEachKey calls fn for every member of the object data, in order and
// duplicates included, with the raw quoted key (compare it with
// [StringEquals]), the raw value and its kind. It stops early, returning nil,
// when fn returns false. It returns ErrNotObject if data is not an object and
// an error on malformed input met before fn stopped the walk; fn may have been
// called for earlier members by then. It does not allocate when fn does not
// escape.
func ForEachKey(data []byte, fn func(key, val []byte, kind Kind) bool) error {
	var it objIter
	if !it.reset(data) {
		return it.err
	}
	var m member
	for it.next(&m) {
		if !fn(data[m.key:m.keyEnd:m.keyEnd], data[m.val:m.valEnd:m.valEnd], m.kind) {
			return nil
		}
	}
	return it.err
}

// ForEachElem calls fn for every element of the array arr, in order, with its
// index, raw value and kind. Early stop and errors work as in ForEachKey;
// ErrNotArray is returned if arr is not an array.
func ForEachElem(arr []byte, fn func(i int, val []byte, kind Kind) bool) error {
	i := skipWS(arr, 0)
	if i >= len(arr) {
		return ErrUnexpectedEnd
	}
	if arr[i] != '[' {
		return ErrNotArray
	}
	i = skipWS(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return endOfDocument(arr, i+1)
	}
	for n := 0; ; n++ {
		e, kind := skipValue(arr, i)
		if e < 0 {
			return codeErr(e)
		}
		if !fn(n, arr[i:e:e], kind) {
			return nil
		}
		i = skipWS(arr, e)
		if i >= len(arr) {
			return ErrUnexpectedEnd
		}
		switch arr[i] {
		case ',':
			i = skipWS(arr, i+1)
		case ']':
			return endOfDocument(arr, i+1)
		default:
			return ErrSyntax
		}
	}
}
