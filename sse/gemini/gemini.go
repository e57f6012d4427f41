// Package gemini converts between OpenAI chat completions and the Gemini
// generateContent wire format (Vertex AI and the Gemini API share it):
// chat requests become generateContent bodies, buffered answers and
// streamGenerateContent?alt=sse events become chat completions and chunks.
// It imports nothing from edge, admin or adapters.
//
// Files are named by direction (chat_to_gemini_request.go,
// gemini_to_chat_response.go, gemini_to_chat_stream.go). The mapping
// follows protocols.md §6; the decisions it leaves open:
//
//   - system and developer messages, wherever they appear, become parts of
//     the top-level systemInstruction, in order (the spec's developer-role
//     table: "Gemini on Vertex → systemInstruction").
//   - Tool calls: Gemini's functionCall has no id (Gemini 3 may send one).
//     A missing id is synthesised as call_<unique hex>. A part's
//     thoughtSignature (Gemini 3 tool use requires it back, unchanged, on
//     the same part) travels inside the id as call_<hex>__thought__<sig>,
//     as LiteLLM does; a request that sends such an id back gets the
//     signature restored on its functionCall part. Tool results
//     (role tool) become functionResponse parts named after the call their
//     tool_call_id answers (looked up in the request's earlier assistant
//     tool_calls); their content is the response object when it is a JSON
//     object, else {"content": <text>}. Adjacent turns of the same Gemini
//     role are merged (parallel results share one user turn).
//   - Tools: function parameters go as parametersJsonSchema (full JSON
//     Schema, no OpenAPI-subset rewriting); tool_choice auto/none/required
//     → AUTO/NONE/ANY, a named function → ANY with allowedFunctionNames.
//   - Images: data URLs → inlineData; other URLs (https, gs) → fileData
//     with the MIME type guessed from the extension (image/jpeg when none
//     is known). input_audio → inlineData audio/<format>; file parts with
//     file_data data URLs → inlineData.
//   - reasoning_effort → generationConfig.thinkingConfig: none →
//     thinkingBudget 0; minimal 512, low 1024, medium 8192, high 24576,
//     xhigh/max 32768, each with includeThoughts true. Thought parts come
//     back as reasoning_content.
//   - Finish reasons: STOP → stop (tool_calls when the answer has function
//     calls), MAX_TOKENS → length, SAFETY, RECITATION, BLOCKLIST,
//     PROHIBITED_CONTENT, SPII, IMAGE_SAFETY, IMAGE_PROHIBITED_CONTENT,
//     IMAGE_RECITATION, LANGUAGE → content_filter; anything else → stop. A
//     blocked prompt (promptFeedback.blockReason, no candidates) is an
//     answer with content null and finish_reason content_filter.
//   - Usage: prompt_tokens = promptTokenCount + toolUsePromptTokenCount
//     (cached tokens included, cached_tokens = cachedContentTokenCount);
//     completion_tokens = candidatesTokenCount + thoughtsTokenCount
//     (reasoning_tokens = thoughtsTokenCount); total = totalTokenCount.
//   - Dropped: n (one candidate is read), logprobs, logit_bias, user,
//     parallel_tool_calls, service_tier, store, metadata, the assistant's
//     reasoning_content on later turns (Gemini needs its own signatures),
//     executableCode/codeExecutionResult parts of answers; only candidate 0
//     is read.
package gemini

import (
	"bytes"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// Errors. Callers compare with errors.Is.
var (
	// ErrInvalidRequest means the chat request cannot be expressed in
	// Gemini terms (malformed messages, tool arguments that are not a JSON
	// object).
	ErrInvalidRequest = errors.New("gemini: invalid chat request")
	// ErrInvalidResponse means a buffered answer is not a
	// GenerateContentResponse.
	ErrInvalidResponse = errors.New("gemini: invalid upstream response")
	// ErrMalformedEvent means a stream event is not a JSON object.
	ErrMalformedEvent = errors.New("gemini: malformed upstream event")
)

// UpstreamError is an error the upstream reported ({"error":{code,
// message, status}}), in a buffered body or in-band in a stream.
type UpstreamError struct {
	Status  string // Google's status, e.g. RESOURCE_EXHAUSTED
	Code    string // the transcode.Code* it maps to
	Message string
}

func (e *UpstreamError) Error() string {
	return "gemini: upstream error " + e.Status + ": " + e.Message
}

// ThoughtMarker separates a synthesised tool-call id from the thought
// signature it carries.
const ThoughtMarker = "__thought__"

// FinishReason maps a Gemini finishReason to the chat finish_reason;
// tools reports whether the answer carried function calls.
func FinishReason(r []byte, tools bool) string {
	switch string(r) {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "LANGUAGE":
		return "content_filter"
	}
	if tools {
		return "tool_calls"
	}
	return "stop"
}

// codeForStatus maps a Google error status to a transcode code.
func codeForStatus(status []byte, code int64) string {
	switch string(status) {
	case "RESOURCE_EXHAUSTED":
		return transcode.CodeRateLimit
	case "UNAVAILABLE":
		return transcode.CodeOverloaded
	case "DEADLINE_EXCEEDED":
		return transcode.CodeTimeout
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION":
		return transcode.CodeInvalidPrompt
	case "INTERNAL":
		return transcode.CodeServerError
	}
	switch code {
	case 429:
		return transcode.CodeRateLimit
	case 503:
		return transcode.CodeOverloaded
	case 400:
		return transcode.CodeInvalidPrompt
	}
	return transcode.CodeUpstreamStreamFail
}

var errorKeys = []string{"code", "message", "status"}

// upstreamError reads a Google error object.
func upstreamError(e []byte, tmp *[]byte) *UpstreamError {
	var v [3][]byte
	_ = rawjson.ScanTop(e, errorKeys, v[:])
	code, _ := rawjson.ParseInt(v[0])
	msg, err := rawjson.AppendUnquote((*tmp)[:0], v[1])
	if err != nil {
		msg = msg[:0]
	}
	*tmp = msg
	st := word(v[2], nil)
	return &UpstreamError{Status: string(st), Code: codeForStatus(st, code), Message: string(msg)}
}

var usageMetaKeys = []string{"promptTokenCount", "candidatesTokenCount", "totalTokenCount", "cachedContentTokenCount", "thoughtsTokenCount", "toolUsePromptTokenCount"}

// readUsage converts usageMetadata to chat terms; false when it holds no
// count.
func readUsage(raw []byte, u *transcode.Usage) bool {
	var v [6][]byte
	if rawjson.KindOf(raw) != rawjson.Object || !usageMembers(raw, &v) {
		return false
	}
	seen := false
	n := func(i int) int64 {
		x, ok := rawjson.ParseInt(v[i])
		if !ok || x < 0 {
			return 0
		}
		seen = true
		return x
	}
	prompt, cand, total, cached, thoughts, toolUse := n(0), n(1), n(2), n(3), n(4), n(5)
	if !seen {
		return false
	}
	*u = transcode.Usage{Prompt: prompt + toolUse, Completion: cand + thoughts, Cached: cached, Reasoning: thoughts}
	u.Total = total
	if u.Total < u.Prompt+u.Completion {
		u.Total = u.Prompt + u.Completion
	}
	return true
}

// usageMembers reads the counts of usageMetadata into v (usageMetaKeys
// order, last occurrence wins) in one pass, as rawjson.ScanTop would; false
// on malformed input.
func usageMembers(raw []byte, v *[6][]byte) bool {
	var c rawjson.Cursor
	c.Reset(raw)
	if !c.Begin() {
		return false
	}
	for c.More() {
		k, esc := c.Key()
		if k == nil {
			return false
		}
		i := -1
		if !esc || bytes.IndexByte(k, '\\') < 0 {
			// Spelled without escapes (esc also marks camel case).
			switch string(k[1 : len(k)-1]) {
			case "promptTokenCount":
				i = 0
			case "candidatesTokenCount":
				i = 1
			case "totalTokenCount":
				i = 2
			case "cachedContentTokenCount":
				i = 3
			case "thoughtsTokenCount":
				i = 4
			case "toolUsePromptTokenCount":
				i = 5
			}
		} else {
			// Slow path - a key spelled with escapes.
			for j, key := range usageMetaKeys {
				if rawjson.StringEquals(k, key) {
					i = j
				}
			}
		}
		val, _, _ := c.Value()
		if i >= 0 {
			v[i] = val
		}
	}
	return c.End() == nil && c.Closer() == '}'
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
	dst = append(dst, '}')
	if u.Reasoning > 0 {
		dst = append(dst, `,"completion_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, u.Reasoning, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

var idSeq atomic.Uint64

// appendCallID appends a synthesised tool-call id (without quotes) and the
// thought signature sig (a JSON string literal or nil) it carries.
func appendCallID(dst, sig []byte) []byte {
	dst = append(dst, "call_"...)
	dst = strconv.AppendUint(dst, uint64(time.Now().UnixNano())^idSeq.Add(1)<<40, 16)
	if s, ok := inner(sig); ok && len(s) > 0 {
		dst = append(dst, ThoughtMarker...)
		dst = append(dst, s...)
	}
	return dst
}

// appendFallbackID appends a unique response id.
func appendFallbackID(dst []byte) []byte {
	dst = append(dst, "gw"...)
	return strconv.AppendUint(dst, uint64(time.Now().UnixNano())^idSeq.Add(1)<<40, 16)
}

// inner returns the content of a JSON string literal that has no escapes.
func inner(raw []byte) ([]byte, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return nil, false
	}
	for _, c := range raw[1 : n-1] {
		if c == '\\' {
			return nil, false
		}
	}
	return raw[1 : n-1], true
}

// word returns the text of a short JSON string (enum values, names): the
// bytes between the quotes when unescaped, else its decoded text in *tmp
// (nil tmp: nil for escaped strings).
func word(raw []byte, tmp *[]byte) []byte {
	if rawjson.KindOf(raw) != rawjson.String {
		return nil
	}
	if b, ok := inner(raw); ok {
		return b
	}
	if tmp == nil {
		return nil
	}
	t, err := rawjson.AppendUnquote((*tmp)[:0], raw)
	if err != nil {
		return nil
	}
	*tmp = t
	return t
}

// isTrue reports a JSON true literal.
func isTrue(raw []byte) bool { return len(raw) == 4 && string(raw) == "true" }

// nonEmptyStr reports a string literal with at least one character.
func nonEmptyStr(raw []byte) bool {
	return len(raw) > 2 && raw[0] == '"'
}

// trimWS trims JSON whitespace.
func trimWS(b []byte) []byte {
	for len(b) > 0 && isWS(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isWS(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// maxKeep bounds the buffers a pooled value keeps.
const maxKeep = 64 << 10

func keep(b []byte) []byte {
	if cap(b) > maxKeep {
		return nil
	}
	return b[:0]
}

// noCopy makes `go vet` flag copies of pooled values.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
