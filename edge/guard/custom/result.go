package custom

import (
	"errors"
	"strings"
	"unicode/utf8"

	"gw/edge/guard"
)

// Sentinels for errors.Is; every error Check returns wraps one of them
// (or a context error when the caller's context ended first).
var (
	// ErrTimeout: the hook call (waiting for a runtime included) ran past
	// timeout_ms or the context's deadline.
	ErrTimeout = errors.New("script exceeded timeout_ms")
	// ErrMemory: the script's runtime reached max_memory_bytes.
	ErrMemory = errors.New("script exceeded max_memory_bytes")
	// ErrThrew: the hook threw, or its promise rejected.
	ErrThrew = errors.New("script threw")
	// ErrResult: the hook returned a value outside the result contract.
	ErrResult = errors.New("script returned an invalid result")
	// ErrEngine: the JS engine failed for a reason of its own.
	ErrEngine = errors.New("script engine failure")
	// ErrClosed: Check after Close.
	ErrClosed = errors.New("checker closed")
)

// Error is the error of a failed check or load. Its text names the
// guardrail, the sentinel and, for a throw, only the standard error class
// and the script position: never the thrown message, which could carry
// request text or a secret.
type Error struct {
	Guardrail string
	Err       error  // one of the sentinels
	Detail    string // e.g. "TypeError at script:3:9"; never script data
}

func (e *Error) Error() string {
	s := "custom guardrail \"" + e.Guardrail + "\": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// shapeErrors are the codes the glue returns as "S<code>".
var shapeErrors = [...]string{
	1: "the result must be undefined, null or an object",
	2: `result.action must be "allow", "block" or "replace"`,
	3: "result.reason must be a string",
	4: "result.reason must be at most 1024 characters",
	5: "result.rule must be 1 to 64 characters of A-Z a-z 0-9 _ . : -",
	6: "result.texts must be an array with one entry per input text",
	7: "result.texts entries must be a string, null or undefined",
}

// errorClasses are the names a throw is reported by (glue "E<name>").
var errorClasses = [...]string{"Error", "TypeError", "RangeError", "SyntaxError", "ReferenceError",
	"EvalError", "URIError", "InternalError", "AggregateError", "throw"}

// DefaultRule is Verdict.Rule for a block whose result names no rule, and
// for every replace.
const DefaultRule = "script"

// maxReasonBytes caps Verdict.Message (1024 UTF-16 units are at most 3072
// UTF-8 bytes; the glue checks the units).
const maxReasonBytes = 3072

// DecodeResult reads one result of the glue into v. enc is the glue's
// encoding of what a hook returned:
//
//	"A"                                  allow
//	"B" rule "\n" reason                 block (rule may be empty)
//	"R" { index "," units ":" text }     replace texts[index]; units is the
//	                                     text's length in UTF-16 code units
//	"E" class ["@" line [":" col]]       the hook threw
//	"M"                                  out of memory
//	"S" code                             a shape error, see shapeErrors
//
// It never trusts enc: a script can replace the glue's helpers, so anything
// malformed is an ErrResult, never a panic or a partial verdict. On error v
// is left reset. The returned error's Guardrail is empty; the caller fills it.
func DecodeResult(enc string, texts []guard.Text, v *guard.Verdict) *Error {
	if enc == "" {
		return &Error{Err: ErrResult, Detail: "malformed result encoding"}
	}
	body := enc[1:]
	switch enc[0] {
	case 'A':
		if body != "" {
			break
		}
		return nil
	case 'B':
		nl := strings.IndexByte(body, '\n')
		if nl < 0 {
			break
		}
		rule, reason := body[:nl], body[nl+1:]
		if rule == "" {
			rule = DefaultRule
		} else if !validRule(rule) {
			break
		}
		if len(reason) > maxReasonBytes || !utf8.ValidString(reason) {
			break
		}
		v.Action, v.Rule, v.Message = guard.Block, rule, reason
		return nil
	case 'R':
		if err := decodeReplace(body, texts, v); err != nil {
			v.Reset()
			return err
		}
		return nil
	case 'E':
		cls, loc, _ := strings.Cut(body, "@")
		if !knownClass(cls) || !validLoc(loc) {
			break
		}
		d := cls
		if cls == "throw" {
			d = "a non-Error value"
		}
		if loc != "" {
			d += " at " + moduleName + ":" + loc
		}
		return &Error{Err: ErrThrew, Detail: d}
	case 'M':
		if body == "" {
			return &Error{Err: ErrMemory}
		}
	case 'S':
		if len(body) == 1 && body[0] >= '1' && int(body[0]-'0') < len(shapeErrors) {
			return &Error{Err: ErrResult, Detail: shapeErrors[body[0]-'0']}
		}
	}
	return &Error{Err: ErrResult, Detail: "malformed result encoding"}
}

// decodeReplace reads the "R" entries. Replacements go into v.Buf first and
// Masks are sliced from it afterwards, because appending may move Buf.
func decodeReplace(body string, texts []guard.Text, v *guard.Verdict) *Error {
	bad := &Error{Err: ErrResult, Detail: "malformed result encoding"}
	type span struct{ idx, off, end int }
	var spans [8]span
	list := spans[:0]
	last := -1
	for body != "" {
		idx, rest, ok := cutNumber(body, ',')
		if !ok || idx <= last || idx >= len(texts) {
			return bad
		}
		units, rest, ok := cutNumber(rest, ':')
		if !ok {
			return bad
		}
		n, ok := utf16Prefix(rest, units)
		if !ok {
			return bad
		}
		text := rest[:n]
		body = rest[n:]
		last = idx
		if text == string(texts[idx].Data) {
			continue // unchanged: no mask
		}
		off := len(v.Buf)
		v.Buf = append(v.Buf, text...)
		list = append(list, span{idx, off, len(v.Buf)})
	}
	if len(list) == 0 {
		return nil // every entry kept its text: allow
	}
	for _, s := range list {
		v.Masks = append(v.Masks, guard.Mask{Index: s.idx, Data: v.Buf[s.off:s.end:s.end]})
	}
	v.Action, v.Rule = guard.Rewrite, DefaultRule
	return nil
}

// cutNumber reads a decimal number of at most 9 digits ended by sep.
func cutNumber(s string, sep byte) (n int, rest string, ok bool) {
	i := 0
	for i < len(s) && i < 10 && s[i] >= '0' && s[i] <= '9' {
		n = n*10 + int(s[i]-'0')
		i++
	}
	if i == 0 || i > 9 || i >= len(s) || s[i] != sep {
		return 0, "", false
	}
	return n, s[i+1:], true
}

// utf16Prefix returns the byte length of the first units UTF-16 code units
// of s (a rune above U+FFFF is two units), or false if s is shorter or the
// count ends inside a surrogate pair.
func utf16Prefix(s string, units int) (int, bool) {
	i := 0
	for units > 0 {
		if i >= len(s) {
			return 0, false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return 0, false // the engine hands over valid UTF-8 only
		}
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if w > units {
			return 0, false
		}
		units -= w
		i += size
	}
	return i, true
}

func validRule(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

func knownClass(s string) bool {
	for _, c := range errorClasses {
		if s == c {
			return true
		}
	}
	return false
}

// validLoc accepts "", "L" or "L:C" with 1 to 9 digits each.
func validLoc(s string) bool {
	if s == "" {
		return true
	}
	line, col, hasCol := strings.Cut(s, ":")
	return digits(line) && (!hasCol || digits(col))
}

func digits(s string) bool {
	if len(s) == 0 || len(s) > 9 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
