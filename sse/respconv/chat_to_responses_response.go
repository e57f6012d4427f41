package respconv

import (
	"strconv"
	"time"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ChatResponseToResponses converts a chat.completion body into a Responses
// response object appended to dst, and returns the usage it reported.
//
// The response id is resp_<chat id without "chatcmpl-">, created_at is the
// chat `created`, model is opt.Model. Output items, in order: a reasoning
// item (summary_text) when the message has reasoning_content (or a string
// `reasoning`) — or, when the message has thinking_blocks (an Anthropic
// upstream's thinking with its signatures, see package msgconv), one
// reasoning item per block with the signature as encrypted_content
// (see thinking.go) — a message item with one output_text part (plus a refusal
// part when the message has a refusal), then one function_call item per tool
// call (call_id = the chat tool-call id; empty arguments become "{}"). Item
// ids are rs_/msg_/fc_ + the id base + "_" + output index. finish_reason
// length (content_filter) gives status incomplete with incomplete_details
// reason max_output_tokens (content_filter). The request's settings are
// echoed from opt.Request (see ResponseOptions).
//
// Only choice 0 is converted (a Responses caller never asks for n > 1).
// A body carrying an `error` object returns ErrUpstreamFailed; a body that
// is not a chat completion returns ErrInvalid. On error dst is returned
// unchanged.
func ChatResponseToResponses(dst, body []byte, opt ResponseOptions) ([]byte, transcode.Usage, error) {
	var u transcode.Usage
	var v [6][]byte // id, created, model, choices, usage, error
	if err := rawjson.ScanTop(body, chatBodyKeys, v[:]); err != nil {
		return dst, u, fieldErr(ErrInvalid, "", "the upstream chat completion is not a JSON object")
	}
	if rawjson.KindOf(v[5]) == rawjson.Object {
		return dst, u, fieldErr(ErrUpstreamFailed, "error", "the upstream returned an error body")
	}
	if rawjson.KindOf(v[3]) != rawjson.Array {
		return dst, u, fieldErr(ErrInvalid, "choices", "missing in the upstream chat completion")
	}
	choice := firstChoice(v[3])
	var m [7][]byte // content, refusal, reasoning_content, reasoning, tool_calls, function_call, thinking_blocks
	msg, _, _ := rawjson.Get(choice, "message")
	if rawjson.KindOf(msg) == rawjson.Object {
		if err := rawjson.ScanTop(msg, chatMsgKeys, m[:]); err != nil {
			return dst, u, fieldErr(ErrInvalid, "choices[0].message", "malformed")
		}
	}
	finish, _, _ := rawjson.Get(choice, "finish_reason")
	u, haveUsage := parseUsage(v[4], true)

	model := opt.Model
	if len(model) == 0 && isStr(v[2]) {
		model = v[2]
	}
	r := respObj{created: createdOrNow(v[1])}
	var baseBuf [64]byte
	r.base = appendIDBase(baseBuf[:0], v[0])

	status, incomplete := finishStatus(finish)
	orig := len(dst)
	dst = r.open(dst, status, model)
	n := 0
	// Reasoning item.
	reasoning := m[2]
	if !nonEmptyStr(reasoning) {
		reasoning = m[3]
	}
	if rawjson.KindOf(m[6]) == rawjson.Array {
		_ = rawjson.ForEachElem(m[6], func(_ int, b []byte, _ rawjson.Kind) bool {
			text, prefix, enc, ok := thinkingBlock(b)
			if !ok {
				return true
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = r.appendItemID(dst, `{"id":"rs_`, n)
			dst = append(dst, `","type":"reasoning","summary":[`...)
			if text != nil {
				dst = append(dst, `{"type":"summary_text","text":`...)
				dst = append(dst, text...)
				dst = append(dst, '}')
			}
			dst = append(dst, ']')
			dst = appendEncrypted(dst, prefix, enc)
			dst = append(dst, '}')
			n++
			return true
		})
		if n > 0 {
			reasoning = nil // the blocks carried it
		}
	}
	if nonEmptyStr(reasoning) {
		dst = r.appendItemID(dst, `{"id":"rs_`, n)
		dst = append(dst, `","type":"reasoning","summary":[{"type":"summary_text","text":`...)
		dst = append(dst, reasoning...)
		dst = append(dst, "}]}"...)
		n++
	}
	// Message item.
	hasText := nonEmptyStr(m[0]) || rawjson.KindOf(m[0]) == rawjson.Array
	if hasText || nonEmptyStr(m[1]) {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = r.appendItemID(dst, `{"id":"msg_`, n)
		dst = append(dst, `","type":"message","status":"`...)
		dst = append(dst, itemStatus(status)...)
		dst = append(dst, `","role":"assistant","content":[`...)
		parts := 0
		switch rawjson.KindOf(m[0]) {
		case rawjson.String:
			if nonEmptyStr(m[0]) {
				dst = appendTextPart(dst, m[0])
				parts++
			}
		case rawjson.Array:
			_ = rawjson.ForEachElem(m[0], func(_ int, p []byte, kind rawjson.Kind) bool {
				if kind != rawjson.Object {
					return true
				}
				if t, _, _ := rawjson.Get(p, "text"); isStr(t) {
					if parts > 0 {
						dst = append(dst, ',')
					}
					dst = appendTextPart(dst, t)
					parts++
				}
				return true
			})
		}
		if nonEmptyStr(m[1]) {
			if parts > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":"refusal","refusal":`...)
			dst = append(dst, m[1]...)
			dst = append(dst, '}')
		}
		dst = append(dst, "]}"...)
		n++
	}
	// Function calls.
	var err error
	if rawjson.KindOf(m[4]) == rawjson.Array {
		_ = rawjson.ForEachElem(m[4], func(i int, tc []byte, kind rawjson.Kind) bool {
			if kind != rawjson.Object {
				return true
			}
			var t [2][]byte // id, function
			_ = rawjson.ScanTop(tc, idFunctionKeys, t[:])
			var f [2][]byte // name, arguments
			_ = rawjson.ScanTop(t[1], nameArgsKeys, f[:])
			if !nonEmptyStr(f[0]) {
				err = fieldErr(ErrInvalid, path("choices[0].message.tool_calls", i)+".function.name", "missing in the upstream chat completion")
				return false
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = r.appendCallItem(dst, n, t[0], f[0], f[1])
			n++
			return true
		})
	} else if rawjson.KindOf(m[5]) == rawjson.Object {
		// Legacy function_call: one call without an id.
		var f [2][]byte
		_ = rawjson.ScanTop(m[5], nameArgsKeys, f[:])
		if nonEmptyStr(f[0]) {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = r.appendCallItem(dst, n, nil, f[0], f[1])
		}
	}
	if err != nil {
		return dst[:orig], transcode.Usage{}, err
	}
	var up *transcode.Usage
	if haveUsage {
		up = &u
	}
	dst = r.close(dst, "", nil, incomplete, up)
	dst = appendEcho(dst, opt.Request)
	return append(dst, '}'), u, nil
}

var (
	chatBodyKeys   = []string{"id", "created", "model", "choices", "usage", "error"}
	chatMsgKeys    = []string{"content", "refusal", "reasoning_content", "reasoning", "tool_calls", "function_call", "thinking_blocks"}
	idFunctionKeys = []string{"id", "function"}
	nameArgsKeys   = []string{"name", "arguments"}
)

// firstChoice returns choice 0 of a choices array: the element whose index
// is 0 (or absent), else the first element.
func firstChoice(choices []byte) []byte {
	var first, zero []byte
	_ = rawjson.ForEachElem(choices, func(i int, c []byte, kind rawjson.Kind) bool {
		if kind != rawjson.Object {
			return true
		}
		if first == nil {
			first = c
		}
		idx, _, ok := rawjson.Get(c, "index")
		if !ok || (len(idx) == 1 && idx[0] == '0') {
			zero = c
			return false
		}
		return true
	})
	if zero != nil {
		return zero
	}
	return first
}

// finishStatus maps a chat finish_reason literal to the Responses status and
// incomplete_details.reason ("" when complete).
func finishStatus(finish []byte) (status, incomplete string) {
	switch {
	case rawjson.StringEquals(finish, "length"):
		return "incomplete", "max_output_tokens"
	case rawjson.StringEquals(finish, "content_filter"):
		return "incomplete", "content_filter"
	}
	return "completed", ""
}

func itemStatus(status string) string {
	if status == "incomplete" {
		return "incomplete"
	}
	return "completed"
}

func appendTextPart(dst, text []byte) []byte {
	dst = append(dst, `{"type":"output_text","text":`...)
	dst = append(dst, text...)
	return append(dst, `,"annotations":[],"logprobs":[]}`...)
}

// createdOrNow returns the chat `created` (or Responses `created_at`) value,
// or the current time when it is missing or not an integer.
func createdOrNow(raw []byte) int64 {
	if n := tokenCount(raw); n > 0 {
		return n
	}
	return time.Now().Unix()
}

// respObj writes Responses response objects: open up to the output array,
// the caller appends the items, close writes the rest.
type respObj struct {
	base    []byte // id base: resp_<base>, msg_<base>_<n>, ...
	created int64
	// createdLit is created in decimal when a stream wrote it once already
	// (a stream writes it in every response object); nil: written anew.
	createdLit []byte
}

func (r respObj) appendItemID(dst []byte, prefix string, n int) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, r.base...)
	dst = append(dst, '_')
	return strconv.AppendInt(dst, int64(n), 10)
}

// open appends `{"id":...,"status":...,"model":...,"output":[`; model is
// the plain alias or its JSON literal. (model is a parameter, not a field:
// rawjson's quoting makes it escape, and with it everything in r.)
func (r respObj) open(dst []byte, status string, model []byte) []byte {
	dst = append(dst, `{"id":"resp_`...)
	dst = append(dst, r.base...)
	dst = append(dst, `","object":"response","created_at":`...)
	if r.createdLit != nil {
		dst = append(dst, r.createdLit...)
	} else {
		dst = strconv.AppendInt(dst, r.created, 10)
	}
	dst = append(dst, `,"status":"`...)
	dst = append(dst, status...)
	dst = append(dst, `","background":false,"model":`...)
	dst = appendModel(dst, model)
	return append(dst, `,"output":[`...)
}

// close ends the output array and appends error, incomplete_details, usage
// and the fixed stateless fields; the caller appends the echo and '}'.
// errCode empty means no error; errMsg is a JSON string literal.
func (r respObj) close(dst []byte, errCode string, errMsg []byte, incomplete string, u *transcode.Usage) []byte {
	dst = append(dst, `],"error":`...)
	if errCode == "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"code":"`...)
		dst = append(dst, errCode...)
		dst = append(dst, `","message":`...)
		dst = append(dst, errMsg...)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"incomplete_details":`...)
	if incomplete == "" {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, `{"reason":"`...)
		dst = append(dst, incomplete...)
		dst = append(dst, `"}`...)
	}
	dst = append(dst, `,"usage":`...)
	if u == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendResponsesUsage(dst, u)
	}
	return append(dst, `,"previous_response_id":null,"store":false`...)
}

// appendCallItem appends a completed function_call item. id and name are
// upstream literals (id may be missing), args the arguments literal.
func (r respObj) appendCallItem(dst []byte, n int, id, name, args []byte) []byte {
	dst = r.appendItemID(dst, `{"id":"fc_`, n)
	dst = append(dst, `","type":"function_call","status":"completed","call_id":`...)
	if nonEmptyStr(id) {
		dst = append(dst, id...)
	} else {
		dst = r.appendItemID(dst, `"call_`, n)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"name":`...)
	dst = append(dst, name...)
	dst = append(dst, `,"arguments":`...)
	if nonEmptyStr(args) {
		dst = append(dst, args...)
	} else {
		dst = append(dst, `"{}"`...)
	}
	return append(dst, '}')
}

// Echo: the request settings a Responses object repeats.

var echoKeys = []string{
	"instructions", "max_output_tokens", "max_tool_calls", "metadata", "parallel_tool_calls",
	"reasoning", "temperature", "text", "tool_choice", "tools", "top_p", "truncation", "user",
	"safety_identifier", "prompt_cache_key", "service_tier", "top_logprobs",
}

// echoDefaults are written for members the request lacks (or has as null);
// "" means the member is left out when absent.
var echoDefaults = [...]string{
	"null", "null", "null", "{}", "true",
	`{"effort":null,"summary":null}`, "1.0", `{"format":{"type":"text"}}`, `"auto"`, "[]", "1.0", `"disabled"`, "null",
	"", "", "", "",
}

// defaultEcho is appendEcho's answer without a request, built once.
var defaultEcho = appendEchoOf(nil, nil)

// echoPrefixes are the `,"key":` spellings of echoKeys.
var echoPrefixes = func() (p [len(echoDefaults)]string) {
	for i, k := range echoKeys {
		p[i] = `,"` + k + `":`
	}
	return p
}()

// appendEcho appends `,"instructions":...,"tools":...` echoing req (the
// caller's Responses request; nil or malformed echoes defaults). Values are
// compacted onto one line. Nothing is allocated.
func appendEcho(dst, req []byte) []byte {
	if len(req) == 0 {
		// Fast path - no request (every stream's Reset) echoes the defaults.
		return append(dst, defaultEcho...)
	}
	return appendEchoOf(dst, req)
}

// appendEchoOf is appendEcho for a request body (or nil: the defaults).
func appendEchoOf(dst, req []byte) []byte {
	var v [len(echoDefaults)][]byte
	if len(req) > 0 && rawjson.ScanTop(req, echoKeys, v[:]) != nil {
		clear(v[:])
	}
	for i := range echoDefaults {
		val := v[i]
		if k := rawjson.KindOf(val); k == rawjson.Invalid || k == rawjson.Null || !rawjson.Valid(val) {
			if echoDefaults[i] == "" {
				continue
			}
			dst = append(dst, echoPrefixes[i]...)
			dst = append(dst, echoDefaults[i]...)
			continue
		}
		dst = append(dst, echoPrefixes[i]...)
		dst = appendCompact(dst, val)
	}
	return dst
}
