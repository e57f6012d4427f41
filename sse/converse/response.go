package converse

import (
	"strconv"
	"sync"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ResponseToChat appends to dst the chat.completion for a buffered Converse
// answer and returns it with the usage in chat terms. model is the
// caller-facing alias. dst may be nil and must not overlap body; on error
// dst is returned unchanged and the error wraps ErrInvalidResponse.
//
// The one choice's message has content (the text blocks joined, or null),
// reasoning_content (the reasoningText blocks joined, when any) and
// tool_calls (one per toolUse block, the input as the arguments string);
// finish_reason per FinishReason; usage per the package comment.
func ResponseToChat(dst, body, model []byte) ([]byte, transcode.Usage, error) {
	var u transcode.Usage
	if !rawjson.Valid(body) {
		return dst, u, respErr("the body is not valid JSON")
	}
	c := respPool.Get().(*respScratch)
	defer func() {
		c.text, c.think, c.calls, c.tmp = keep(c.text), keep(c.think), keep(c.calls), keep(c.tmp)
		respPool.Put(c)
	}()
	return c.convert(dst, body, model, &u)
}

type respScratch struct {
	text, think, calls, tmp []byte
}

var respPool = sync.Pool{New: func() any { return new(respScratch) }}

type convError struct {
	base error
	msg  string
}

func (e *convError) Error() string { return e.base.Error() + ": " + e.msg }
func (e *convError) Unwrap() error { return e.base }

func respErr(msg string) error { return &convError{ErrInvalidResponse, msg} }

var respKeys = []string{"output", "stopReason", "usage"}

func (c *respScratch) convert(dst, body, model []byte, u *transcode.Usage) ([]byte, transcode.Usage, error) {
	var v [3][]byte
	if rawjson.ScanTop(body, respKeys, v[:]) != nil {
		return dst, *u, respErr("the body is not a JSON object")
	}
	content, kind, ok := rawjson.GetPath(v[0], "message", "content")
	if !ok || kind != rawjson.Array {
		return dst, *u, respErr("output.message.content must be an array")
	}
	c.text, c.think, c.calls = c.text[:0], c.think[:0], c.calls[:0]
	hasText, calls := false, 0
	var err error
	_ = rawjson.ForEachElem(content, func(_ int, b []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			err = respErr("a content block is not an object")
			return false
		}
		if t, _, ok := rawjson.Get(b, "text"); ok && rawjson.KindOf(t) == rawjson.String {
			hasText = true
			c.text, _ = rawjson.AppendUnquote(c.text, t)
			return true
		}
		if t, _, ok := rawjson.GetPath(b, "reasoningContent", "reasoningText", "text"); ok && rawjson.KindOf(t) == rawjson.String {
			c.think, _ = rawjson.AppendUnquote(c.think, t)
			return true
		}
		tu, tk, ok := rawjson.Get(b, "toolUse")
		if !ok || tk != rawjson.Object {
			return true // images, documents, citations: no chat form
		}
		var w [3][]byte
		_ = rawjson.ScanTop(tu, toolUseKeys, w[:])
		if rawjson.KindOf(w[0]) != rawjson.String || rawjson.KindOf(w[1]) != rawjson.String {
			err = respErr("a toolUse block needs a string toolUseId and name")
			return false
		}
		input := w[2]
		if input == nil || rawjson.KindOf(input) == rawjson.Null {
			input = strEmptyObject
		}
		if calls > 0 {
			c.calls = append(c.calls, ',')
		}
		calls++
		c.calls = append(c.calls, `{"id":`...)
		c.calls = append(c.calls, w[0]...)
		c.calls = append(c.calls, `,"type":"function","function":{"name":`...)
		c.calls = append(c.calls, w[1]...)
		c.calls = append(c.calls, `,"arguments":`...)
		c.calls = rawjson.AppendQuoteBytes(c.calls, input)
		c.calls = append(c.calls, "}}"...)
		return true
	})
	if err != nil {
		return dst, *u, err
	}
	readUsage(v[2], u)

	dst = append(dst, `{"id":"`...)
	dst = appendID(dst)
	dst = append(dst, `","object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, nowUnix(), 10)
	dst = append(dst, `,"model":`...)
	c.tmp = append(c.tmp[:0], model...)
	dst = rawjson.AppendQuoteBytes(dst, c.tmp)
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
	if calls > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		dst = append(dst, c.calls...)
		dst = append(dst, ']')
	}
	reason := "stop"
	if w, ok := inner(v[1]); ok {
		reason = FinishReason(w)
	}
	if reason == "stop" && calls > 0 {
		reason = "tool_calls"
	}
	dst = append(dst, `},"finish_reason":"`...)
	dst = append(dst, reason...)
	dst = append(dst, `","logprobs":null}],"usage":`...)
	dst = appendChatUsage(dst, u)
	return append(dst, '}'), *u, nil
}

var (
	toolUseKeys    = []string{"toolUseId", "name", "input"}
	strEmptyObject = []byte(`{}`)
)
