package converse

import (
	"strconv"
	"sync"

	"gw/sse/msgconv"
	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// ResponseToChat appends to dst the chat.completion for a buffered Converse
// answer and returns it with the usage in chat terms. model is the
// caller-facing alias. dst may be nil and must not overlap body; on error
// dst is returned unchanged and the error wraps ErrInvalidResponse.
//
// The one choice's message has content (the text blocks joined, or null;
// text after another kind of block is preceded by msgconv.BlockSeparator),
// reasoning_content (the reasoningText blocks joined, when any),
// thinking_blocks (each signed reasoningText as {type: thinking, thinking,
// signature} and each redactedContent as {type: redacted_thinking, data},
// in order, as msgconv gives them for Anthropic upstreams) and
// tool_calls (one per toolUse block, the input as the arguments string);
// finish_reason per FinishReason; usage per the package comment.
func ResponseToChat(dst, body, model []byte) ([]byte, transcode.Usage, error) {
	var u transcode.Usage
	if !rawjson.Valid(body) {
		return dst, u, respErr("the body is not valid JSON")
	}
	c := respPool.Get().(*respScratch)
	defer func() {
		c.text, c.think, c.calls, c.tmp, c.blocks = keep(c.text), keep(c.think), keep(c.calls), keep(c.tmp), keep(c.blocks)
		respPool.Put(c)
	}()
	return c.convert(dst, body, model, &u)
}

type respScratch struct {
	text, think, calls, tmp, blocks []byte
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
	c.text, c.think, c.calls, c.blocks = c.text[:0], c.think[:0], c.calls[:0], c.blocks[:0]
	hasText, textBreak, calls := false, false, 0
	var err error
	_ = rawjson.ForEachElem(content, func(_ int, b []byte, k rawjson.Kind) bool {
		if k != rawjson.Object {
			err = respErr("a content block is not an object")
			return false
		}
		if t, _, ok := rawjson.Get(b, "text"); ok && rawjson.KindOf(t) == rawjson.String {
			if textBreak {
				// Text after another kind of block: a new paragraph, as
				// msgconv joins Anthropic's blocks.
				c.text = append(c.text, msgconv.BlockSeparator...)
				textBreak = false
			}
			hasText = true
			c.text, _ = rawjson.AppendUnquote(c.text, t)
			return true
		}
		textBreak = hasText
		if rc, _, ok := rawjson.Get(b, "reasoningContent"); ok {
			var r [2][]byte // reasoningText, redactedContent
			_ = rawjson.ScanTop(rc, reasoningKeys, r[:])
			var tv [2][]byte // text, signature
			_ = rawjson.ScanTop(r[0], reasoningTextKeys, tv[:])
			if rawjson.KindOf(tv[0]) == rawjson.String {
				c.think, _ = rawjson.AppendUnquote(c.think, tv[0])
				if rawjson.KindOf(tv[1]) == rawjson.String {
					// The signature goes to the caller as a thinking
					// block (msgconv's thinking_blocks), which the next
					// turn's request carries back (sse/converse/request.go).
					c.blocks = appendBlock(c.blocks, strSignedOpen, tv[0], strSignature, tv[1], &c.tmp)
				}
			} else if rawjson.KindOf(r[1]) == rawjson.String {
				c.blocks = appendBlock(c.blocks, strRedactedOpen, r[1], nil, nil, &c.tmp)
			}
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
	if len(c.blocks) > 0 {
		dst = append(dst, `,"thinking_blocks":[`...)
		dst = append(dst, c.blocks...)
		dst = append(dst, ']')
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
	toolUseKeys       = []string{"toolUseId", "name", "input"}
	reasoningKeys     = []string{"reasoningText", "redactedContent"}
	reasoningTextKeys = []string{"text", "signature"}
	strEmptyObject    = []byte(`{}`)
	strSignedOpen     = []byte(`{"type":"thinking","thinking":`)
	strSignature      = []byte(`,"signature":`)
	strRedactedOpen   = []byte(`{"type":"redacted_thinking","data":`)
)

// appendBlock appends (comma-separated) one thinking_blocks element: open,
// the string literal a, then (when sep is set) sep and the literal b, and
// the closing brace; nothing when a literal is malformed.
func appendBlock(dst, open, a, sep, b []byte, tmp *[]byte) []byte {
	n := len(dst)
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, open...)
	var ok bool
	if dst, ok = appendStr(dst, a, tmp); !ok {
		return dst[:n]
	}
	if sep != nil {
		dst = append(dst, sep...)
		if dst, ok = appendStr(dst, b, tmp); !ok {
			return dst[:n]
		}
	}
	return append(dst, '}')
}
