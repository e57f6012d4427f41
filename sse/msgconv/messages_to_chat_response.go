package msgconv

import (
	"strconv"
	"sync"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// MessagesResponseToChat appends to dst the chat.completion for a buffered
// Anthropic messages response and returns it with the usage in chat terms.
// model is the caller-facing alias (empty keeps the upstream's model). dst
// may be nil and must not overlap body.
//
// The completion has id chatcmpl-<msg id>, created now, one choice whose
// message has role assistant, content (the text blocks joined, or null; a
// text block after another kind of block that followed earlier text is
// preceded by BlockSeparator, text blocks that follow each other directly
// are one passage split at citations and are joined as they are),
// reasoning_content (the thinking blocks joined, when any), thinking_blocks
// (every thinking block as {type: thinking, thinking, signature} and every
// redacted_thinking block as {type: redacted_thinking, data}, in order, so
// the caller can send them back on its next turn; LiteLLM's field) and
// tool_calls
// (one per tool_use block: id, type function, function {name, arguments:
// the input as a JSON string}); finish_reason per FinishReason; usage
// {prompt_tokens = input + cache read + cache creation, completion_tokens,
// total_tokens, prompt_tokens_details.cached_tokens = cache read}.
//
// An error envelope ({"type":"error",...}) yields an *UpstreamError; a body
// that is not a message yields an error wrapping ErrInvalidResponse. dst is
// returned unchanged on error.
func MessagesResponseToChat(dst, body, model []byte) ([]byte, transcode.Usage, error) {
	var u transcode.Usage
	if !rawjson.Valid(body) {
		return dst, u, respErr("not valid JSON", "body")
	}
	c := respPool.Get().(*respScratch)
	defer releaseResp(c)
	out, err := c.messagesToChat(dst, body, model, &u)
	if err != nil {
		return dst, transcode.Usage{}, err
	}
	return out, u, nil
}

// respScratch holds the buffers of one response conversion.
type respScratch struct {
	text   []byte
	think  []byte
	blocks []byte // thinking_blocks elements
	calls  []byte
	tmp    []byte
}

var respPool = sync.Pool{New: func() any { return new(respScratch) }}

func releaseResp(c *respScratch) {
	c.text, c.think, c.calls, c.tmp = keep(c.text), keep(c.think), keep(c.calls), keep(c.tmp)
	c.blocks = keep(c.blocks)
	respPool.Put(c)
}

var msgRespKeys = []string{"type", "id", "model", "content", "stop_reason", "usage", "error"}

func (c *respScratch) messagesToChat(dst, body, model []byte, u *transcode.Usage) ([]byte, error) {
	var v [7][]byte
	if rawjson.ScanTop(body, msgRespKeys, v[:]) != nil {
		return dst, respErr("not a JSON object", "body")
	}
	if rawjson.StringEquals(v[0], "error") || rawjson.KindOf(v[6]) == rawjson.Object {
		return dst, anthropicBodyError(v[6])
	}
	if rawjson.KindOf(v[3]) != rawjson.Array {
		return dst, respErr("must be an array", "content")
	}
	c.text, c.think, c.calls, c.blocks = c.text[:0], c.think[:0], c.calls[:0], c.blocks[:0]
	hasText, textBreak := false, false
	var err error
	_ = rawjson.ForEachElem(v[3], func(j int, b []byte, _ rawjson.Kind) bool {
		var w [10][]byte
		if rawjson.ScanTop(b, blockKeys, w[:]) != nil {
			err = respErr("must be an object", "content[#]", j)
			return false
		}
		typ := word(w[bkType], &c.tmp)
		if string(typ) != "text" && hasText {
			textBreak = true
		}
		switch string(typ) {
		case "text":
			if t := w[bkText]; rawjson.KindOf(t) == rawjson.String {
				if textBreak {
					c.text = append(c.text, BlockSeparator...)
					textBreak = false
				}
				hasText = true
				c.text, _ = rawjson.AppendUnquote(c.text, t)
			}
		case "thinking":
			var tv [2][]byte // thinking, signature
			_ = rawjson.ScanTop(b, thinkingKeys, tv[:])
			if rawjson.KindOf(tv[0]) == rawjson.String {
				c.think, _ = rawjson.AppendUnquote(c.think, tv[0])
				if rawjson.KindOf(tv[1]) == rawjson.String {
					c.blocks = appendThinkingBlock(c.blocks, tv[0], tv[1], &c.tmp)
				}
			}
		case "redacted_thinking":
			if d, _, _ := rawjson.Get(b, "data"); rawjson.KindOf(d) == rawjson.String {
				c.blocks = appendRedactedBlock(c.blocks, d, &c.tmp)
			}
		case "tool_use":
			if rawjson.KindOf(w[bkID]) != rawjson.String || rawjson.KindOf(w[bkName]) != rawjson.String {
				err = respErr("must have a string id and name", "content[#]", j)
				return false
			}
			input := w[bkInput]
			if input == nil || rawjson.KindOf(input) == rawjson.Null {
				input = strEmptyObject
			}
			if len(c.calls) > 0 {
				c.calls = append(c.calls, ',')
			}
			c.calls = append(c.calls, `{"id":`...)
			c.calls = append(c.calls, w[bkID]...)
			c.calls = append(c.calls, `,"type":"function","function":{"name":`...)
			c.calls = append(c.calls, w[bkName]...)
			c.calls = append(c.calls, `,"arguments":`...)
			c.calls = rawjson.AppendQuoteBytes(c.calls, input)
			c.calls = append(c.calls, "}}"...)
		}
		// server tool blocks: no chat form.
		return true
	})
	if err != nil {
		return dst, err
	}
	readAnthropicUsage(v[5], u)

	dst = append(dst, `{"id":`...)
	t := append(c.tmp[:0], strChatcmplPrefix...)
	if rawjson.KindOf(v[1]) == rawjson.String {
		t, _ = rawjson.AppendUnquote(t, v[1])
	}
	c.tmp = t
	dst = rawjson.AppendQuoteBytes(dst, t)
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, nowUnix(), 10)
	dst = append(dst, `,"model":`...)
	switch {
	case len(model) > 0:
		dst = appendQuoted(dst, model, &c.tmp)
	case rawjson.KindOf(v[2]) == rawjson.String:
		dst = append(dst, v[2]...)
	default:
		dst = append(dst, `""`...)
	}
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
	if len(c.calls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		dst = append(dst, c.calls...)
		dst = append(dst, ']')
	}
	dst = append(dst, `},"finish_reason":"`...)
	dst = append(dst, FinishReason(word(v[4], &c.tmp))...)
	dst = append(dst, `","logprobs":null}],"usage":`...)
	dst = appendChatUsage(dst, u)
	return append(dst, '}'), nil
}

// readAnthropicUsage converts an Anthropic usage object to chat terms.
func readAnthropicUsage(raw []byte, u *transcode.Usage) {
	var v [5][]byte
	if rawjson.ScanTop(raw, usageKeys, v[:]) != nil {
		return
	}
	in, _ := parseCount(v[0])
	u.Completion, _ = parseCount(v[1])
	u.Cached, _ = parseCount(v[2])
	u.CacheCreation, _ = parseCount(v[3])
	if d, _, ok := rawjson.Get(v[4], "thinking_tokens"); ok {
		u.Reasoning, _ = parseCount(d)
	}
	u.Prompt = in + u.Cached + u.CacheCreation
	u.Total = u.Prompt + u.Completion
}

// appendChatUsage appends a chat usage object.
func appendChatUsage(dst []byte, u *transcode.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, u.Prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.Completion, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.Total, 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.Cached, 10)
	if u.CacheCreation > 0 {
		dst = append(dst, `,"cache_write_tokens":`...)
		dst = strconv.AppendInt(dst, u.CacheCreation, 10)
	}
	dst = append(dst, '}')
	if u.Reasoning > 0 {
		dst = append(dst, `,"completion_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, u.Reasoning, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// anthropicBodyError builds the *UpstreamError for an Anthropic error
// object.
func anthropicBodyError(e []byte) error {
	var v [2][]byte
	_ = rawjson.ScanTop(e, errorKeys, v[:])
	var tb []byte
	typ := word(v[0], &tb)
	msg, _ := rawjson.AppendUnquote(nil, v[1])
	return &UpstreamError{Type: string(typ), Code: codeForAnthropicError(typ, msg), Message: string(msg)}
}

var thinkingKeys = []string{"thinking", "signature"}

// appendThinkingBlock appends (comma-separated) the thinking_blocks element
// of an Anthropic thinking block: the string literals thinking and
// signature as they came, re-quoted when they hold escapes.
func appendThinkingBlock(dst, thinking, signature []byte, tmp *[]byte) []byte {
	n := len(dst)
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"type":"thinking","thinking":`...)
	var ok bool
	if dst, ok = appendStr(dst, thinking, tmp); !ok {
		return dst[:n]
	}
	dst = append(dst, `,"signature":`...)
	if dst, ok = appendStr(dst, signature, tmp); !ok {
		return dst[:n]
	}
	return append(dst, '}')
}

// appendRedactedBlock appends (comma-separated) the thinking_blocks element
// of an Anthropic redacted_thinking block.
func appendRedactedBlock(dst, data []byte, tmp *[]byte) []byte {
	n := len(dst)
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"type":"redacted_thinking","data":`...)
	var ok bool
	if dst, ok = appendStr(dst, data, tmp); !ok {
		return dst[:n]
	}
	return append(dst, '}')
}
