package respconv

import (
	"strconv"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ResponsesResponseToChat converts a Responses response object into a
// chat.completion body appended to dst, and returns the usage it reported.
//
// The id is chatcmpl-<response id without resp_>, created is created_at,
// model is opt.Model. Output items become one assistant message: the
// output_text parts of message items concatenated into content (null when
// there are none), refusal parts into refusal, function_call items into
// tool_calls (call_id → id), reasoning summaries (or reasoning_text content)
// into reasoning_content, summary parts separated by a blank line. Other
// items (hosted tools) are dropped. finish_reason: length for status
// incomplete with reason max_output_tokens, content_filter for reason
// content_filter, tool_calls when there is a function call, else stop.
//
// A body with status failed (or an `error` object) returns
// ErrUpstreamFailed; a body that is not a response object returns
// ErrInvalid. On error dst is returned unchanged.
func ResponsesResponseToChat(dst, body []byte, opt ResponseOptions) ([]byte, transcode.Usage, error) {
	var u transcode.Usage
	var v [7][]byte // id, created_at, model, status, incomplete_details, output, usage
	if err := rawjson.ScanTop(body, respBodyKeys, v[:]); err != nil {
		return dst, u, fieldErr(ErrInvalid, "", "the upstream response is not a JSON object")
	}
	if rawjson.StringEquals(v[3], "failed") {
		return dst, u, fieldErr(ErrUpstreamFailed, "status", "the upstream response failed")
	}
	if e, kind, _ := rawjson.Get(body, "error"); kind == rawjson.Object && len(e) > 2 {
		return dst, u, fieldErr(ErrUpstreamFailed, "error", "the upstream returned an error body")
	}
	if rawjson.KindOf(v[5]) != rawjson.Array {
		return dst, u, fieldErr(ErrInvalid, "output", "missing in the upstream response")
	}
	u, haveUsage := parseUsage(v[6], false)

	dst = append(dst, `{"id":"chatcmpl-`...)
	dst = appendIDBase(dst, v[0])
	dst = append(dst, `","object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, createdOrNow(v[1]), 10)
	dst = append(dst, `,"model":`...)
	switch {
	case len(opt.Model) > 0:
		dst = appendModel(dst, opt.Model)
	case isStr(v[2]):
		dst = append(dst, v[2]...)
	default:
		dst = append(dst, `""`...)
	}
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)

	// content: the output_text parts joined.
	nText := 0
	eachPart(v[5], "message", "content", func(p []byte) {
		var pv [3][]byte
		_ = rawjson.ScanTop(p, partKeys, pv[:])
		if rawjson.StringEquals(pv[0], "output_text") && isStr(pv[1]) {
			if nText == 0 {
				dst = append(dst, '"')
			}
			dst = append(dst, strBody(pv[1])...)
			nText++
		}
	})
	if nText == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
	}
	// refusal.
	dst = append(dst, `,"refusal":`...)
	nRefusal := 0
	eachPart(v[5], "message", "content", func(p []byte) {
		var pv [3][]byte
		_ = rawjson.ScanTop(p, partKeys, pv[:])
		if rawjson.StringEquals(pv[0], "refusal") && isStr(pv[2]) {
			if nRefusal == 0 {
				dst = append(dst, '"')
			}
			dst = append(dst, strBody(pv[2])...)
			nRefusal++
		}
	})
	if nRefusal == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
	}
	// reasoning_content: summaries, else reasoning_text content.
	nReason := 0
	appendReason := func(p []byte) {
		if t, _, _ := rawjson.Get(p, "text"); isStr(t) && len(t) > 2 {
			if nReason == 0 {
				dst = append(dst, `,"reasoning_content":"`...)
			} else {
				dst = append(dst, `\n\n`...)
			}
			dst = append(dst, strBody(t)...)
			nReason++
		}
	}
	eachPart(v[5], "reasoning", "summary", appendReason)
	if nReason == 0 {
		eachPart(v[5], "reasoning", "content", appendReason)
	}
	if nReason > 0 {
		dst = append(dst, '"')
	}
	// tool_calls.
	nCalls := 0
	_ = rawjson.ForEachElem(v[5], func(_ int, item []byte, kind rawjson.Kind) bool {
		var f [5][]byte // type, id, call_id, name, arguments
		if kind != rawjson.Object || rawjson.ScanTop(item, fcKeys, f[:]) != nil || !rawjson.StringEquals(f[0], "function_call") {
			return true
		}
		if nCalls == 0 {
			dst = append(dst, `,"tool_calls":[`...)
		} else {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		switch {
		case nonEmptyStr(f[2]):
			dst = append(dst, f[2]...)
		case nonEmptyStr(f[1]):
			dst = append(dst, f[1]...)
		default:
			dst = append(dst, `"call_`...)
			dst = strconv.AppendInt(dst, int64(nCalls), 10)
			dst = append(dst, '"')
		}
		dst = append(dst, `,"type":"function","function":{"name":`...)
		if isStr(f[3]) {
			dst = append(dst, f[3]...)
		} else {
			dst = append(dst, `""`...)
		}
		dst = append(dst, `,"arguments":`...)
		if nonEmptyStr(f[4]) {
			dst = append(dst, f[4]...)
		} else {
			dst = append(dst, `"{}"`...)
		}
		dst = append(dst, "}}"...)
		nCalls++
		return true
	})
	if nCalls > 0 {
		dst = append(dst, ']')
	}
	reason := "stop"
	switch {
	case rawjson.StringEquals(v[3], "incomplete"):
		reason = "length"
		if d, _, _ := rawjson.Get(v[4], "reason"); rawjson.StringEquals(d, "content_filter") {
			reason = "content_filter"
		}
	case nCalls > 0:
		reason = "tool_calls"
	}
	dst = append(dst, `},"logprobs":null,"finish_reason":"`...)
	dst = append(dst, reason...)
	dst = append(dst, `"}]`...)
	if haveUsage {
		dst = append(dst, `,"usage":`...)
		dst = appendChatUsage(dst, &u)
	}
	return append(dst, '}'), u, nil
}

var respBodyKeys = []string{"id", "created_at", "model", "status", "incomplete_details", "output", "usage"}

// eachPart calls fn for every element of the array member list of every
// output item of type typ.
func eachPart(output []byte, typ, list string, fn func(p []byte)) {
	_ = rawjson.ForEachElem(output, func(_ int, item []byte, kind rawjson.Kind) bool {
		if kind != rawjson.Object {
			return true
		}
		var v [2][]byte
		listKeys := [2]string{"type", list}
		if rawjson.ScanTop(item, listKeys[:], v[:]) != nil || !rawjson.StringEquals(v[0], typ) {
			return true
		}
		_ = rawjson.ForEachElem(v[1], func(_ int, p []byte, kind rawjson.Kind) bool {
			if kind == rawjson.Object {
				fn(p)
			}
			return true
		})
		return true
	})
}
