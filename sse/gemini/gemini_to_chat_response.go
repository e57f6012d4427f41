package gemini

import (
	"strconv"
	"sync"
	"time"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

var respKeys = []string{"candidates", "usageMetadata", "promptFeedback", "responseId", "error"}

// ResponseToChat appends to dst the chat.completion for a buffered
// GenerateContentResponse and returns it with the usage in chat terms.
// model is the caller-facing alias (a JSON string's text, unquoted). dst
// must not overlap body.
//
// The completion has id chatcmpl-<responseId>, one choice whose message has
// the text parts joined as content (null when none), the thought parts as
// reasoning_content and one tool call per functionCall part; finish_reason
// per FinishReason (content_filter for a blocked prompt); usage per the
// package comment. An error envelope yields an *UpstreamError; a body that
// is not a response an error wrapping ErrInvalidResponse. dst is returned
// unchanged on error.
func ResponseToChat(dst, body, model []byte) ([]byte, transcode.Usage, error) {
	var u transcode.Usage
	if !rawjson.Valid(body) {
		return dst, u, respErr("not valid JSON")
	}
	c := respPool.Get().(*respScratch)
	defer c.release()
	out, err := c.toChat(dst, body, model, &u)
	if err != nil {
		return dst, transcode.Usage{}, err
	}
	return out, u, nil
}

type respScratch struct {
	text, think, calls, tmp []byte
}

var respPool = sync.Pool{New: func() any { return new(respScratch) }}

func (c *respScratch) release() {
	c.text, c.think, c.calls, c.tmp = keep(c.text), keep(c.think), keep(c.calls), keep(c.tmp)
	respPool.Put(c)
}

type respError struct{ msg string }

func (e *respError) Error() string { return ErrInvalidResponse.Error() + ": " + e.msg }
func (e *respError) Unwrap() error { return ErrInvalidResponse }

func respErr(msg string) error { return &respError{msg: msg} }

func (c *respScratch) toChat(dst, body, model []byte, u *transcode.Usage) ([]byte, error) {
	var v [5][]byte
	if rawjson.ScanTop(body, respKeys, v[:]) != nil {
		return dst, respErr("not a JSON object")
	}
	if e := v[evError]; rawjson.KindOf(e) == rawjson.Object {
		return dst, upstreamError(e, &c.tmp)
	}
	cands, fb := v[evCandidates], v[evFeedback]
	blocked := false
	if r, _, ok := rawjson.Get(fb, "blockReason"); ok && rawjson.KindOf(r) == rawjson.String {
		blocked = true
	}
	if rawjson.KindOf(cands) != rawjson.Array && !blocked {
		return dst, respErr("`candidates` must be an array")
	}
	c.text, c.think, c.calls = c.text[:0], c.think[:0], c.calls[:0]
	hasText, ncalls := false, 0
	var reason []byte
	var cur rawjson.Cursor
	cur.Reset(cands)
	if rawjson.KindOf(cands) == rawjson.Array && cur.Begin() && cur.More() {
		cand, _, _ := cur.Value()
		var cv [2][]byte
		if rawjson.ScanTop(cand, candidateKeys, cv[:]) != nil {
			return dst, respErr("`candidates[0]` must be an object")
		}
		reason = word(cv[1], &c.tmp)
		if parts, _, ok := rawjson.Get(cv[0], "parts"); ok && rawjson.KindOf(parts) == rawjson.Array {
			var pc rawjson.Cursor
			pc.Reset(parts)
			if pc.Begin() {
				for pc.More() {
					p, _, _ := pc.Value()
					var pv [4][]byte
					if rawjson.ScanTop(p, partKeys, pv[:]) != nil {
						continue
					}
					if t := pv[0]; rawjson.KindOf(t) == rawjson.String {
						if isTrue(pv[1]) {
							c.think, _ = rawjson.AppendUnquote(c.think, t)
						} else {
							hasText = true
							c.text, _ = rawjson.AppendUnquote(c.text, t)
						}
						continue
					}
					if fc := pv[2]; rawjson.KindOf(fc) == rawjson.Object {
						var fv [3][]byte
						if rawjson.ScanTop(fc, callKeys, fv[:]) != nil || rawjson.KindOf(fv[0]) != rawjson.String {
							return dst, respErr("`functionCall` must have a string name")
						}
						if ncalls > 0 {
							c.calls = append(c.calls, ',')
						}
						ncalls++
						c.calls = append(c.calls, `{"id":`...)
						if nonEmptyStr(fv[2]) {
							c.calls = append(c.calls, fv[2]...)
						} else {
							c.tmp = appendCallID(c.tmp[:0], pv[3])
							c.calls = rawjson.AppendQuoteBytes(c.calls, c.tmp)
						}
						c.calls = append(c.calls, `,"type":"function","function":{"name":`...)
						c.calls = append(c.calls, fv[0]...)
						c.calls = append(c.calls, `,"arguments":`...)
						if rawjson.KindOf(fv[1]) == rawjson.Object {
							c.calls = rawjson.AppendQuoteBytes(c.calls, fv[1])
						} else {
							c.calls = append(c.calls, `"{}"`...)
						}
						c.calls = append(c.calls, "}}"...)
					}
				}
			}
		}
	}
	readUsage(v[evUsage], u)

	dst = append(dst, `{"id":`...)
	t := append(c.tmp[:0], "chatcmpl-"...)
	n := len(t)
	if rawjson.KindOf(v[evResponseID]) == rawjson.String {
		t, _ = rawjson.AppendUnquote(t, v[evResponseID])
	}
	if len(t) == n {
		t = appendFallbackID(t)
	}
	c.tmp = t
	dst = rawjson.AppendQuoteBytes(dst, t)
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, time.Now().Unix(), 10)
	dst = append(dst, `,"model":`...)
	dst = rawjson.AppendQuoteBytes(dst, model)
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if hasText {
		dst = rawjson.AppendQuoteBytes(dst, c.text)
	} else {
		dst = append(dst, "null"...)
	}
	if len(c.think) > 0 {
		dst = append(dst, `,"reasoning_content":`...)
		dst = rawjson.AppendQuoteBytes(dst, c.think)
	}
	if ncalls > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		dst = append(dst, c.calls...)
		dst = append(dst, ']')
	}
	dst = append(dst, `},"finish_reason":"`...)
	if blocked && reason == nil {
		dst = append(dst, "content_filter"...)
	} else {
		dst = append(dst, FinishReason(reason, ncalls > 0)...)
	}
	dst = append(dst, `","logprobs":null}],"usage":`...)
	dst = appendChatUsage(dst, u)
	return append(dst, '}'), nil
}
