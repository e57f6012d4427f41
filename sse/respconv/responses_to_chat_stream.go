package respconv

import (
	"strconv"
	"sync"

	"gw/sse"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ResponsesToChat converts a Responses SSE stream into chat-completions
// chunks, for a chat caller served by a Responses-native upstream. Get one
// with NewResponsesToChatStream, call Reset (and SetIncludeUsage), feed every
// upstream event to Event, finish with End or Fail, and return it with
// ReleaseStream.
//
// Mapping (protocols.md 4.9 C):
//
//   - response.created (or the first event with content): the role chunk
//     {"role":"assistant","content":""}. The chunk id is chatcmpl-<response
//     id without resp_>, created is created_at, model is the alias.
//   - response.output_text.delta → delta.content; response.refusal.delta →
//     delta.refusal; response.reasoning_summary_text.delta and
//     response.reasoning_text.delta → delta.reasoning_content (a blank line
//     between summary parts).
//   - function_call items: output_item.added → tool_calls[{index k, id:
//     call_id, type function, function{name, arguments ""}}] with k counting
//     the calls from 0; function_call_arguments.delta → arguments fragments
//     of call k. Arguments that were never streamed as deltas are sent whole
//     from function_call_arguments.done or output_item.done.
//   - response.completed / response.incomplete: the finish chunk
//     (tool_calls if a function call was seen, else stop; incomplete gives
//     length, or content_filter), the usage chunk (choices [], only with
//     SetIncludeUsage(true)), then data: [DONE]. If nothing was streamed,
//     the final response's output is sent first.
//   - response.failed and error (both the flat and the nested shape) → a
//     chat error frame {"error":{type, code, message}} and no [DONE]; Event
//     returns ErrUpstreamFailed.
//   - everything else (part and item lifecycle, hosted tools, keep-alive
//     `[DONE]`s) is dropped.
//
// sequence_number is not read, so the early-2025 streams without it work.
// Events without an `event:` line (JSON lines) are typed by their `type`.
type ResponsesToChat struct {
	noCopy noCopy

	model        []byte // alias literal; empty keeps the upstream model
	head         []byte // `{"id":...,"object":"chat.completion.chunk","created":N,"model":M`
	includeUsage bool
	started      bool // head built and role chunk written
	content      bool // Started
	done         bool
	terminated   bool
	sawCall      bool
	usage        transcode.Usage
	haveUsage    bool
	calls        []respCall
	tmp          []byte
}

type respCall struct {
	itemID   []byte
	outIdx   int64
	streamed bool // argument text was sent
}

var r2cPool sync.Pool

// NewResponsesToChatStream returns a pooled *ResponsesToChat as a
// transcode.Stream. Call Reset before use and ReleaseStream after.
func NewResponsesToChatStream() transcode.Stream {
	if v := r2cPool.Get(); v != nil {
		return v.(*ResponsesToChat)
	}
	s := &ResponsesToChat{}
	s.Reset(nil)
	return s
}

// Reset implements transcode.Stream. model is the caller-facing alias,
// plain or as a JSON string literal; empty keeps the upstream's model. The
// usage chunk is off again: call SetIncludeUsage after Reset.
func (s *ResponsesToChat) Reset(model []byte) {
	s.model = s.model[:0]
	if len(model) > 0 {
		s.model = appendModel(s.model, model)
	}
	s.head = s.head[:0]
	s.includeUsage = false
	s.started, s.content, s.done, s.terminated, s.sawCall = false, false, false, false, false
	s.usage, s.haveUsage = transcode.Usage{}, false
	s.calls = s.calls[:0]
	s.tmp = s.tmp[:0]
}

// SetIncludeUsage turns on the usage chunk (choices [], before [DONE]) that
// a chat caller asks for with stream_options.include_usage. Usage reports
// the usage either way.
func (s *ResponsesToChat) SetIncludeUsage(on bool) { s.includeUsage = on }

// Started implements transcode.Stream: true once content, a tool call or
// the finish was written.
func (s *ResponsesToChat) Started() bool { return s.content }

// Usage implements transcode.Stream.
func (s *ResponsesToChat) Usage() (transcode.Usage, bool) { return s.usage, s.haveUsage }

// Terminated reports whether the upstream's terminal event
// (response.completed or response.incomplete) arrived.
func (s *ResponsesToChat) Terminated() bool { return s.terminated }

var (
	deltaKey    = []string{"delta"}
	argsKeys    = []string{"item_id", "output_index", "delta", "arguments"}
	itemKeys    = []string{"item", "output_index"}
	respKeys    = []string{"response"}
	summaryKeys = []string{"summary_index"}
	typeKey     = []string{"type"}
)

// Event implements transcode.Stream for one Responses event.
func (s *ResponsesToChat) Event(dst, name, data []byte) ([]byte, error) {
	if s.done || sse.IsDone(data) {
		return dst, nil
	}
	var v [4][]byte
	typ := name
	if len(typ) == 0 {
		if err := rawjson.ScanTop(data, typeKey, v[:1]); err != nil || !isStr(v[0]) {
			return dst, fieldErr(ErrInvalid, "", "an upstream Responses event is not a typed JSON object")
		}
		typ = strBody(v[0])
	}
	switch string(typ) {
	case "response.output_text.delta", "response.refusal.delta",
		"response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if err := rawjson.ScanTop(data, deltaKey, v[:1]); err != nil {
			return dst, errEvent
		}
		if !nonEmptyStr(v[0]) {
			return dst, nil
		}
		field := `{"content":`
		switch typ[len("response.")] {
		case 'r':
			field = `{"reasoning_content":`
			if typ[len("response.re")] == 'f' {
				field = `{"refusal":`
			}
		}
		dst = s.chunk(dst)
		dst = append(dst, field...)
		dst = append(dst, v[0]...)
		s.content = true
		return append(dst, "},\"finish_reason\":null}]}\n\n"...), nil

	case "response.function_call_arguments.delta", "response.function_call_arguments.done":
		if err := rawjson.ScanTop(data, argsKeys, v[:4]); err != nil {
			return dst, errEvent
		}
		k := s.findCall(v[0], v[1])
		if k < 0 {
			return dst, nil
		}
		args := v[2]
		if typ[len(typ)-1] == 'e' { // .done: only if nothing was streamed
			if s.calls[k].streamed {
				return dst, nil
			}
			args = v[3]
		}
		return s.argsChunk(dst, k, args), nil

	case "response.output_item.added", "response.output_item.done":
		if err := rawjson.ScanTop(data, itemKeys, v[:2]); err != nil {
			return dst, errEvent
		}
		return s.callItem(dst, v[0], v[1]), nil

	case "response.reasoning_summary_part.added":
		if err := rawjson.ScanTop(data, summaryKeys, v[:1]); err != nil {
			return dst, errEvent
		}
		if n, ok := rawjson.ParseInt(v[0]); ok && n > 0 {
			dst = s.chunk(dst)
			dst = append(dst, `{"reasoning_content":"\n\n"},"finish_reason":null}]}`+"\n\n"...)
		}
		return dst, nil

	case "response.created", "response.in_progress", "response.queued":
		if s.started {
			return dst, nil
		}
		if err := rawjson.ScanTop(data, respKeys, v[:1]); err != nil {
			return dst, errEvent
		}
		return s.begin(dst, v[0]), nil

	case "response.completed", "response.incomplete":
		if err := rawjson.ScanTop(data, respKeys, v[:1]); err != nil {
			return dst, errEvent
		}
		return s.complete(dst, v[0], typ[len(typ)-1] == 'e'), nil

	case "response.failed":
		if err := rawjson.ScanTop(data, respKeys, v[:1]); err != nil {
			return dst, errEvent
		}
		errObj, _, _ := rawjson.Get(v[0], "error")
		if u, ok := parseUsage(getRaw(v[0], "usage"), false); ok {
			s.usage, s.haveUsage = u, true
		}
		return s.errorFrame(dst, errObj), ErrUpstreamFailed

	case "error":
		if rawjson.KindOf(data) != rawjson.Object {
			return dst, errEvent
		}
		errObj := data
		if inner, kind, ok := rawjson.Get(data, "error"); ok && kind == rawjson.Object {
			errObj = inner // the observed nested shape
		}
		return s.errorFrame(dst, errObj), ErrUpstreamFailed
	}
	return dst, nil
}

var errEvent = fieldErr(ErrInvalid, "", "an upstream Responses event is not a JSON object")

func getRaw(obj []byte, key string) []byte {
	v, _, _ := rawjson.Get(obj, key)
	return v
}

// End implements transcode.Stream: the finish chunk (tool_calls or stop),
// the usage chunk if asked for and known, and data: [DONE] — unless a
// terminal chunk or error frame was written already.
func (s *ResponsesToChat) End(dst []byte) []byte {
	if s.done {
		return dst
	}
	return s.finish(dst, "")
}

// Fail implements transcode.Stream: a chat error frame
// {"error":{"type","code","message"}}, no [DONE]. Nothing is written after
// a terminal chunk or error frame.
func (s *ResponsesToChat) Fail(dst []byte, code, message string) []byte {
	if s.done {
		return dst
	}
	s.done = true
	dst = append(dst, `data: {"error":{"type":"`...)
	dst = append(dst, chatErrorType(code)...)
	dst = append(dst, `","code":`...)
	dst = rawjson.AppendQuote(dst, code)
	dst = append(dst, `,"message":`...)
	dst = rawjson.AppendQuote(dst, message)
	return append(dst, "}}\n\n"...)
}

// errorFrame ends the stream with the chat error frame for a Responses error
// object {code, message} (or {type, code, message}).
func (s *ResponsesToChat) errorFrame(dst, errObj []byte) []byte {
	s.done = true
	var e [3][]byte // type, code, message
	_ = rawjson.ScanTop(errObj, errKeys, e[:])
	code := e[1]
	dst = append(dst, `data: {"error":{"type":"`...)
	if nonEmptyStr(code) {
		dst = append(dst, chatErrorType(string(strBody(code)))...)
		dst = append(dst, `","code":`...)
		dst = append(dst, code...)
	} else {
		c := ErrorCode(0, errObj)
		dst = append(dst, chatErrorType(c)...)
		dst = append(dst, `","code":"`...)
		dst = append(dst, c...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"message":`...)
	if isStr(e[2]) {
		dst = append(dst, e[2]...)
	} else {
		dst = append(dst, strUpstreamFailed...)
	}
	return append(dst, "}}\n\n"...)
}

// begin builds the chunk head from the response object resp (nil: a random
// id and the current time) and writes the role chunk.
func (s *ResponsesToChat) begin(dst, resp []byte) []byte {
	var r [3][]byte // id, created_at, model
	_ = rawjson.ScanTop(resp, beginKeys, r[:])
	s.head = append(s.head[:0], `{"id":"chatcmpl-`...)
	s.head = appendIDBase(s.head, r[0])
	s.head = append(s.head, `","object":"chat.completion.chunk","created":`...)
	s.head = strconv.AppendInt(s.head, createdOrNow(r[1]), 10)
	s.head = append(s.head, `,"model":`...)
	switch {
	case len(s.model) > 0:
		s.head = append(s.head, s.model...)
	case isStr(r[2]):
		s.head = append(s.head, r[2]...)
	default:
		s.head = append(s.head, `""`...)
	}
	s.started = true
	dst = s.chunk(dst)
	return append(dst, `{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
}

var beginKeys = []string{"id", "created_at", "model"}

// chunk opens a chunk up to its delta: `data: {head,"choices":[{"index":0,"delta":`.
func (s *ResponsesToChat) chunk(dst []byte) []byte {
	if !s.started {
		dst = s.begin(dst, nil)
	}
	dst = append(dst, "data: "...)
	dst = append(dst, s.head...)
	return append(dst, `,"choices":[{"index":0,"delta":`...)
}

// findCall returns the tool index of the call with item id lit, or at
// output index idx when the id is unknown; -1 if none.
func (s *ResponsesToChat) findCall(lit, idx []byte) int {
	if isStr(lit) {
		id := strBody(lit)
		for k := range s.calls {
			if string(s.calls[k].itemID) == string(id) {
				return k
			}
		}
	}
	if n, ok := rawjson.ParseInt(idx); ok {
		for k := range s.calls {
			if s.calls[k].outIdx == n {
				return k
			}
		}
	}
	return -1
}

var fcKeys = []string{"type", "id", "call_id", "name", "arguments"}

// callItem handles output_item.added/.done: a function_call item gets its
// tool-call header (once) and any arguments not streamed yet.
func (s *ResponsesToChat) callItem(dst, item, outIdx []byte) []byte {
	var f [5][]byte // type, id, call_id, name, arguments
	if rawjson.ScanTop(item, fcKeys, f[:]) != nil || !rawjson.StringEquals(f[0], "function_call") {
		return dst
	}
	k := s.findCall(f[1], outIdx)
	if k < 0 {
		k = len(s.calls)
		if k < cap(s.calls) {
			s.calls = s.calls[:k+1]
		} else {
			s.calls = append(s.calls, respCall{})
		}
		c := &s.calls[k]
		c.itemID = c.itemID[:0]
		if isStr(f[1]) {
			c.itemID = append(c.itemID, strBody(f[1])...)
		}
		c.outIdx, _ = rawjson.ParseInt(outIdx)
		c.streamed = false
		s.sawCall, s.content = true, true
		dst = s.chunk(dst)
		dst = append(dst, `{"tool_calls":[{"index":`...)
		dst = strconv.AppendInt(dst, int64(k), 10)
		dst = append(dst, `,"id":`...)
		switch {
		case nonEmptyStr(f[2]):
			dst = append(dst, f[2]...)
		case nonEmptyStr(f[1]):
			dst = append(dst, f[1]...)
		default:
			dst = append(dst, `"call_`...)
			dst = strconv.AppendInt(dst, int64(k), 10)
			dst = append(dst, '"')
		}
		dst = append(dst, `,"type":"function","function":{"name":`...)
		if isStr(f[3]) {
			dst = append(dst, f[3]...)
		} else {
			dst = append(dst, `""`...)
		}
		dst = append(dst, `,"arguments":""}}]},"finish_reason":null}]}`+"\n\n"...)
	}
	if !s.calls[k].streamed {
		dst = s.argsChunk(dst, k, f[4])
	}
	return dst
}

// argsChunk writes an arguments fragment for call k; empty fragments are
// skipped.
func (s *ResponsesToChat) argsChunk(dst []byte, k int, args []byte) []byte {
	if !nonEmptyStr(args) {
		return dst
	}
	s.calls[k].streamed = true
	dst = s.chunk(dst)
	dst = append(dst, `{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(k), 10)
	dst = append(dst, `,"function":{"arguments":`...)
	dst = append(dst, args...)
	return append(dst, `}}]},"finish_reason":null}]}`+"\n\n"...)
}

var completeKeys = []string{"status", "incomplete_details", "usage", "output"}

// complete handles response.completed / response.incomplete.
func (s *ResponsesToChat) complete(dst, resp []byte, incompleteEvent bool) []byte {
	var r [4][]byte
	_ = rawjson.ScanTop(resp, completeKeys, r[:])
	if u, ok := parseUsage(r[2], false); ok {
		s.usage, s.haveUsage = u, true
	}
	if !s.content && rawjson.KindOf(r[3]) == rawjson.Array {
		dst = s.replayOutput(dst, r[3])
	}
	reason := ""
	if incompleteEvent || rawjson.StringEquals(r[0], "incomplete") {
		reason = "length"
		if d, _, _ := rawjson.Get(r[1], "reason"); rawjson.StringEquals(d, "content_filter") {
			reason = "content_filter"
		}
	}
	s.terminated = true
	return s.finish(dst, reason)
}

// replayOutput sends the text and calls of a final output array when the
// upstream streamed none of it.
func (s *ResponsesToChat) replayOutput(dst, output []byte) []byte {
	_ = rawjson.ForEachElem(output, func(i int, item []byte, kind rawjson.Kind) bool {
		if kind != rawjson.Object {
			return true
		}
		typ, _, _ := rawjson.Get(item, "type")
		switch {
		case rawjson.StringEquals(typ, "function_call"):
			var idx [20]byte
			dst = s.callItem(dst, item, strconv.AppendInt(idx[:0], int64(i), 10))
		case rawjson.StringEquals(typ, "message"):
			parts, _, _ := rawjson.Get(item, "content")
			_ = rawjson.ForEachElem(parts, func(_ int, p []byte, _ rawjson.Kind) bool {
				var pv [3][]byte // type, text, refusal
				_ = rawjson.ScanTop(p, partKeys, pv[:])
				switch {
				case rawjson.StringEquals(pv[0], "output_text") && nonEmptyStr(pv[1]):
					dst = s.chunk(dst)
					dst = append(dst, `{"content":`...)
					dst = append(dst, pv[1]...)
				case rawjson.StringEquals(pv[0], "refusal") && nonEmptyStr(pv[2]):
					dst = s.chunk(dst)
					dst = append(dst, `{"refusal":`...)
					dst = append(dst, pv[2]...)
				default:
					return true
				}
				dst = append(dst, "},\"finish_reason\":null}]}\n\n"...)
				return true
			})
		}
		return true
	})
	return dst
}

var partKeys = []string{"type", "text", "refusal"}

// finish writes the finish chunk (reason "" derives tool_calls or stop),
// the usage chunk and [DONE].
func (s *ResponsesToChat) finish(dst []byte, reason string) []byte {
	if reason == "" {
		reason = "stop"
		if s.sawCall {
			reason = "tool_calls"
		}
	}
	dst = s.chunk(dst)
	dst = append(dst, `{},"finish_reason":"`...)
	dst = append(dst, reason...)
	dst = append(dst, "\"}]}\n\n"...)
	if s.includeUsage && s.haveUsage {
		dst = append(dst, "data: "...)
		dst = append(dst, s.head...)
		dst = append(dst, `,"choices":[],"usage":`...)
		dst = appendChatUsage(dst, &s.usage)
		dst = append(dst, "}\n\n"...)
	}
	s.content, s.done = true, true
	return sse.AppendDone(dst)
}
