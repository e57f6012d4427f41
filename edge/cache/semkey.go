package cache

// The semantic key. A semantic policy splits a request in two: the prompt
// (the text of its last message, which must be a user message of text
// only) is embedded and compared by similarity; everything else is the
// scope, matched exactly with the exact key's canonicalisation
// (AppendCanonical): the caller format, the alias, every field that can
// change the answer, and the conversation before the last message. Two
// requests can share an answer only when their scopes are identical and
// their prompts similar enough.
//
// The prompt lives in "messages" (chat completions, Anthropic Messages) or
// "input" (Responses: a string is the prompt itself; an array's last item
// is). A last message that is not the user's, or carries anything but text
// (an image, a tool result, a file), is not keyed: those requests are not
// looked up (bypass), since text similarity says nothing about them.

import (
	"gw/sse/rawjson"
)

// promptField returns the raw key of format's prompt member; "" for a
// format the semantic cache does not key.
func promptField(format string) string {
	switch format {
	case "chat_completions", "messages":
		return `"messages"`
	case "responses":
		return `"input"`
	}
	return ""
}

// AppendScope appends the canonical scope of a request (caller format
// format, alias alias) to dst and the text of its prompt to txt. ok is
// false for a body the semantic cache does not key (see above).
func AppendScope(dst, txt []byte, format, alias string, body []byte) (scope, prompt []byte, ok bool) {
	pf := promptField(format)
	if pf == "" {
		return dst, txt, false
	}
	return appendCanon(dst, txt, format, alias, body, pf)
}

// appendScopeValue appends v, the prompt member's value, without its last
// element, and appends the last element's text to txt.
func appendScopeValue(dst, txt, v []byte) ([]byte, []byte, bool) {
	var c rawjson.Cursor
	c.Reset(v)
	switch c.Kind() {
	case rawjson.String: // Responses: the input is the prompt
		t, err := rawjson.AppendUnquote(txt, v)
		return append(dst, "[]"...), t, err == nil && len(t) > len(txt)
	case rawjson.Array:
	default:
		return dst, txt, false
	}
	if !c.Begin() {
		return dst, txt, false
	}
	dst = append(dst, '[')
	var prev []byte
	n := 0
	for c.More() {
		el, _, _ := c.Value()
		if el == nil {
			return dst, txt, false
		}
		if prev != nil {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = appendCompact(dst, prev)
			n++
		}
		prev = el
	}
	if c.End() != nil || prev == nil {
		return dst, txt, false
	}
	t, ok := userText(txt, prev)
	return append(dst, ']'), t, ok
}

// userText appends the text of message m (a user message whose content is
// a string or text parts only) to txt.
func userText(txt, m []byte) ([]byte, bool) {
	var c rawjson.Cursor
	c.Reset(m)
	if c.Kind() != rawjson.Object || !c.Begin() {
		return txt, false
	}
	var role, content []byte
	var ck rawjson.Kind
	for c.More() {
		k, _ := c.Key()
		v, kind, _ := c.Value()
		if k == nil || v == nil {
			return txt, false
		}
		switch string(k) {
		case `"role"`:
			role = v
		case `"content"`:
			content, ck = v, kind
		case `"type"`:
			if !rawjson.StringEquals(v, "message") {
				return txt, false // a Responses item other than a message
			}
		}
	}
	if c.End() != nil || role == nil || !rawjson.StringEquals(role, "user") {
		return txt, false
	}
	n := len(txt)
	switch ck {
	case rawjson.String:
		t, err := rawjson.AppendUnquote(txt, content)
		return t, err == nil && len(t) > n
	case rawjson.Array:
	default:
		return txt, false
	}
	c.Reset(content)
	if !c.Begin() {
		return txt, false
	}
	for c.More() {
		part, kind, _ := c.Value()
		if kind != rawjson.Object {
			return txt, false
		}
		t, _, ok := rawjson.Get(part, "type")
		if !ok || !(rawjson.StringEquals(t, "text") || rawjson.StringEquals(t, "input_text")) {
			return txt, false
		}
		s, sk, ok := rawjson.Get(part, "text")
		if !ok || sk != rawjson.String {
			return txt, false
		}
		if len(txt) > n {
			txt = append(txt, '\n')
		}
		var err error
		if txt, err = rawjson.AppendUnquote(txt, s); err != nil {
			return txt, false
		}
	}
	if c.End() != nil {
		return txt, false
	}
	return txt, len(txt) > n
}
