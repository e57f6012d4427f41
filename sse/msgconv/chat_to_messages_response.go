package msgconv

import (
	"bytes"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ChatResponseToMessages appends to dst the Anthropic message for a buffered
// chat.completion and returns it with the usage in chat terms. model is the
// caller-facing alias (empty keeps the upstream's model). dst may be nil and
// must not overlap body.
//
// The message has id msg_<chat id without chatcmpl->, type message, role
// assistant, content blocks from choice 0 (reasoning_content → a thinking
// block with an empty signature, content and refusal → text blocks,
// thinking_blocks → thinking blocks with their signatures (replacing
// reasoning_content) and redacted_thinking blocks,
// tool_calls → tool_use blocks with the arguments parsed as input; arguments
// that are not a JSON object become {"_raw": "<arguments>"}), stop_reason
// per StopReason, stop_sequence null and usage {input_tokens = prompt −
// cached, cache_creation_input_tokens 0, cache_read_input_tokens = cached,
// output_tokens = completion}.
//
// A body with an error object yields an *UpstreamError; a body that is not
// a completion yields an error wrapping ErrInvalidResponse. dst is returned
// unchanged on error.
func ChatResponseToMessages(dst, body, model []byte) ([]byte, transcode.Usage, error) {
	var u transcode.Usage
	if !rawjson.Valid(body) {
		return dst, u, respErr("not valid JSON", "body")
	}
	c := respPool.Get().(*respScratch)
	defer releaseResp(c)
	out, err := c.chatToMessages(dst, body, model, &u)
	if err != nil {
		return dst, transcode.Usage{}, err
	}
	return out, u, nil
}

var chatRespKeys = []string{"id", "model", "choices", "usage", "error"}
var chatMessageKeys = []string{"content", "reasoning_content", "refusal", "tool_calls", "reasoning", "thinking_blocks"}

func (c *respScratch) chatToMessages(dst, body, model []byte, u *transcode.Usage) ([]byte, error) {
	var v [5][]byte
	if rawjson.ScanTop(body, chatRespKeys, v[:]) != nil {
		return dst, respErr("not a JSON object", "body")
	}
	if rawjson.KindOf(v[4]) == rawjson.Object {
		return dst, chatBodyError(v[4])
	}
	var choice []byte
	_ = rawjson.ForEachElem(v[2], func(_ int, ch []byte, k rawjson.Kind) bool {
		if k == rawjson.Object {
			choice = ch
		}
		return false
	})
	if choice == nil {
		return dst, respErr("must hold a choice", "choices")
	}
	msg, _, _ := rawjson.Get(choice, "message")
	finish, _, _ := rawjson.Get(choice, "finish_reason")
	var m [6][]byte
	if rawjson.ScanTop(msg, chatMessageKeys, m[:]) != nil {
		return dst, respErr("must be an object", "choices[0].message")
	}
	if rawjson.KindOf(v[3]) == rawjson.Object {
		readChatUsage(v[3], u)
	}

	dst = append(dst, `{"id":`...)
	t := append(c.tmp[:0], strMsgPrefix...)
	n := len(t)
	if rawjson.KindOf(v[0]) == rawjson.String {
		t, _ = rawjson.AppendUnquote(t, v[0])
		if bytes.HasPrefix(t[n:], strChatcmplPrefix) {
			t = append(t[:n], t[n+len(strChatcmplPrefix):]...)
		}
	}
	c.tmp = t
	dst = rawjson.AppendQuoteBytes(dst, t)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	switch {
	case len(model) > 0:
		dst = appendQuoted(dst, model, &c.tmp)
	case rawjson.KindOf(v[1]) == rawjson.String:
		dst = append(dst, v[1]...)
	default:
		dst = append(dst, `""`...)
	}
	dst = append(dst, `,"content":[`...)
	nb := 0
	sep := func() {
		if nb > 0 {
			dst = append(dst, ',')
		}
		nb++
	}
	reasoning := m[1]
	if reasoning == nil {
		reasoning = m[4]
	}
	// Signed thinking blocks (thinking_blocks, see sse/converse and
	// MessagesResponseToChat) replace the unsigned reasoning_content they
	// repeat: the caller sends them back to continue a tool loop.
	signed := false
	_ = rawjson.ForEachElem(m[5], func(_ int, b []byte, k rawjson.Kind) bool {
		t, _, _ := rawjson.Get(b, "type")
		signed = k == rawjson.Object && rawjson.StringEquals(t, "thinking")
		return !signed
	})
	if isNonEmptyStr(reasoning) && !signed {
		sep()
		dst = append(dst, `{"type":"thinking","thinking":`...)
		dst = append(dst, reasoning...)
		dst = append(dst, `,"signature":""}`...)
	}
	_ = rawjson.ForEachElem(m[5], func(_ int, b []byte, k rawjson.Kind) bool {
		var bv [4][]byte // type, thinking, signature, data
		if k != rawjson.Object || rawjson.ScanTop(b, thinkingBlockKeys, bv[:]) != nil {
			return true
		}
		switch {
		case rawjson.StringEquals(bv[0], "thinking") && rawjson.KindOf(bv[2]) == rawjson.String:
			th := bv[1]
			if rawjson.KindOf(th) != rawjson.String {
				th = strEmptyString
			}
			sep()
			dst = append(dst, `{"type":"thinking","thinking":`...)
			dst = append(dst, th...)
			dst = append(dst, `,"signature":`...)
			dst = append(dst, bv[2]...)
			dst = append(dst, '}')
		case rawjson.StringEquals(bv[0], "redacted_thinking") && rawjson.KindOf(bv[3]) == rawjson.String:
			sep()
			dst = append(dst, `{"type":"redacted_thinking","data":`...)
			dst = append(dst, bv[3]...)
			dst = append(dst, '}')
		}
		return true
	})
	switch content := m[0]; rawjson.KindOf(content) {
	case rawjson.String:
		if !isEmptyStr(content) {
			sep()
			dst = append(dst, `{"type":"text","text":`...)
			dst = append(dst, content...)
			dst = append(dst, '}')
		}
	case rawjson.Array:
		_ = rawjson.ForEachElem(content, func(_ int, p []byte, _ rawjson.Kind) bool {
			text, kind, _ := rawjson.Get(p, "text")
			if kind == rawjson.String && !isEmptyStr(text) {
				sep()
				dst = append(dst, `{"type":"text","text":`...)
				dst = append(dst, text...)
				dst = append(dst, '}')
			}
			return true
		})
	}
	if isNonEmptyStr(m[2]) {
		sep()
		dst = append(dst, `{"type":"text","text":`...)
		dst = append(dst, m[2]...)
		dst = append(dst, '}')
	}
	hasTools := false
	_ = rawjson.ForEachElem(m[3], func(_ int, tc []byte, _ rawjson.Kind) bool {
		id, _, _ := rawjson.Get(tc, "id")
		f, _, _ := rawjson.Get(tc, "function")
		var fv [2][]byte
		_ = rawjson.ScanTop(f, funcKeys, fv[:])
		if rawjson.KindOf(fv[0]) != rawjson.String {
			return true
		}
		hasTools = true
		sep()
		dst = append(dst, `{"type":"tool_use","id":`...)
		if rawjson.KindOf(id) == rawjson.String {
			dst = append(dst, id...)
		} else {
			dst = append(dst, `"toolu_`...)
			dst = appendFallbackID(dst)
			dst = append(dst, '"')
		}
		dst = append(dst, `,"name":`...)
		dst = append(dst, fv[0]...)
		dst = append(dst, `,"input":`...)
		dst = c.appendInput(dst, fv[1])
		dst = append(dst, '}')
		return true
	})
	dst = append(dst, `],"stop_reason":"`...)
	stop := StopReason(word(finish, &c.text))
	if finish == nil || rawjson.KindOf(finish) == rawjson.Null {
		if hasTools {
			stop = "tool_use"
		}
	}
	dst = append(dst, stop...)
	dst = append(dst, `","stop_sequence":null,"usage":{"input_tokens":`...)
	return append(appendUsageTail(dst, u, u.Completion), "}}"...), nil
}

// appendInput appends the input object for a tool call's arguments string:
// its content when that is a JSON object, {} when it is empty, else
// {"_raw": arguments}.
func (c *respScratch) appendInput(dst, args []byte) []byte {
	switch rawjson.KindOf(args) {
	case rawjson.Object:
		return append(dst, args...)
	case rawjson.String:
	default:
		return append(dst, strEmptyObject...)
	}
	t, err := rawjson.AppendUnquote(c.think[:0], args)
	if err != nil {
		return append(dst, strEmptyObject...)
	}
	c.think = t
	t = trimWS(t)
	switch {
	case len(t) == 0:
		return append(dst, strEmptyObject...)
	case t[0] == '{' && rawjson.Valid(t):
		return append(dst, t...)
	}
	dst = append(dst, `{"_raw":`...)
	dst = append(dst, args...)
	return append(dst, '}')
}

// chatBodyError builds the *UpstreamError for an OpenAI error object.
func chatBodyError(e []byte) error {
	var v [3][]byte
	_ = rawjson.ScanTop(e, chatErrorKeys, v[:])
	var tb, cb []byte
	typ := word(v[1], &tb)
	code := word(v[2], &cb)
	msg, _ := rawjson.AppendUnquote(nil, v[0])
	at := anthropicTypeForChatError(code, typ)
	return &UpstreamError{Type: string(typ), Code: codeForAnthropicError([]byte(at), msg), Message: string(msg)}
}
