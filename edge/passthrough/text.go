package passthrough

import (
	"bytes"
	"unicode/utf8"

	"gw/sse/rawjson"
)

// maxDepth bounds the JSON nesting ExtractText walks: deeper values are
// left out (and reported unreadable) rather than recursing without end.
const maxDepth = 64

// ExtractText appends to dst the text of a passthrough body that
// guardrails judge as one piece (spec "Passthrough routes scan extracted
// text as one piece"): for a JSON body every string value, decoded and
// joined with '\n' (object keys are not content); for a text body (text/*,
// form or empty content type with valid UTF-8 ... any non-JSON textual
// type) the body itself. ok is false for a body whose text cannot be
// extracted (binary, malformed JSON): the guardrails' fail-open rules
// then decide.
func ExtractText(dst, body []byte, contentType []byte) (out []byte, ok bool) {
	ct := mediaType(contentType)
	switch {
	case len(body) == 0:
		return dst, true
	case bytes.HasSuffix(ct, []byte("json")) || (len(ct) == 0 && (body[0] == '{' || body[0] == '[')):
		if !rawjson.Valid(body) {
			return dst, false
		}
		w := walker{dst: dst, ok: true}
		w.value(body, rawjson.KindOf(body), 0)
		if len(w.dst) > len(dst) {
			w.dst = w.dst[:len(w.dst)-1] // the last separator
		}
		return w.dst, w.ok
	case bytes.HasPrefix(ct, []byte("text/")), string(ct) == "application/x-www-form-urlencoded",
		string(ct) == "application/xml", len(ct) == 0:
		if !textual(body) {
			return dst, false
		}
		return append(dst, body...), true
	}
	return dst, false
}

type walker struct {
	dst []byte
	ok  bool
}

func (w *walker) value(v []byte, k rawjson.Kind, depth int) {
	if depth > maxDepth {
		w.ok = false
		return
	}
	switch k {
	case rawjson.String:
		s, err := rawjson.AppendUnquote(w.dst, v)
		if err != nil {
			w.ok = false
			return
		}
		w.dst = append(s, '\n')
	case rawjson.Object:
		_ = rawjson.ForEachKey(v, func(_, val []byte, kind rawjson.Kind) bool {
			w.value(val, kind, depth+1)
			return w.ok
		})
	case rawjson.Array:
		_ = rawjson.ForEachElem(v, func(_ int, val []byte, kind rawjson.Kind) bool {
			w.value(val, kind, depth+1)
			return w.ok
		})
	}
}

// mediaType is the lowercase media type of a Content-Type value, without
// parameters.
func mediaType(ct []byte) []byte {
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return bytes.ToLower(bytes.TrimSpace(ct))
}

// textual reports a body that reads as text: no NUL and valid UTF-8.
func textual(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
}
