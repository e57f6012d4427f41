// Package respconv converts between OpenAI chat completions and the OpenAI
// Responses API, in both directions, for request bodies, response bodies and
// SSE streams. Files are named by direction:
//
//   - a Responses caller served by a chat-completions upstream (gw serves
//     /v1/responses for any model): responses_to_chat_request.go,
//     chat_to_responses_response.go, chat_to_responses_stream.go;
//   - a chat caller served by a Responses-native upstream (a provider key
//     declaring apis.responses): chat_to_responses_request.go,
//     responses_to_chat_response.go, responses_to_chat_stream.go.
//
// Everything works on raw bytes with gw/sse/rawjson: append-style, nil-safe
// dst, no encoding/json, no fmt, no maps on the request path. The streams are
// pooled and allocate nothing per event once their buffers have grown.
//
// # Statelessness
//
// gw keeps no conversation state. A Responses request that depends on state
// stored by a previous call (previous_response_id, conversation, store: true,
// background, item_reference input items, stored prompt templates) cannot be
// served by a chat upstream: the request converter returns an error wrapping
// ErrStateful, which the edge answers with 400. Responses written by gw echo
// "store": false and "previous_response_id": null.
//
// # Failure codes
//
// A Responses caller sees a mid-stream failure as `response.failed` with
// response.error.code taken from the spec's list (invalid_prompt,
// context_length_exceeded, insufficient_quota, rate_limit_exceeded,
// server_is_overloaded, slow_down); see ResponsesErrorCode for how the
// transcode.Code* values map onto it and ErrorCode for how an upstream error
// (status, type, code, message) maps onto transcode.Code*.
//
// # Reasoning
//
// Chat upstreams that stream reasoning (`delta.reasoning_content`, or
// `delta.reasoning` as a string) become a reasoning output item whose text
// streams as response.reasoning_summary_text.delta with summary_index 0: the
// Responses API has no other event a stock client renders as thinking, and the
// raw reasoning is what such backends expose in place of a summary. The other
// way, summary and reasoning_text deltas become `delta.reasoning_content`, the
// field most chat clients read (DeepSeek, vLLM, LiteLLM); summary parts after
// the first are separated by a blank line. Encrypted reasoning has no chat
// form and is dropped.
package respconv

import (
	"errors"
	"math/rand/v2"
	"strconv"

	"gw/sse/rawjson"
	"gw/sse/transcode"
)

// Errors returned by the converters. Test with errors.Is; the concrete error
// is a *FieldError naming the offending field.
var (
	// ErrStateful marks a Responses request that needs server-side state gw
	// does not keep (previous_response_id, conversation, store: true,
	// background, item_reference, prompt). The edge answers 400.
	ErrStateful = errors.New("respconv: stateful Responses features are not supported (gw is stateless: resend the full input and set store to false)")

	// ErrUnsupported marks a feature that has no equivalent in the target
	// format (hosted tools, n > 1, stop sequences on a Responses upstream...).
	// The edge answers 400.
	ErrUnsupported = errors.New("respconv: unsupported")

	// ErrInvalid marks a body that is not valid JSON or breaks the format's
	// shape (a message without role, a tool without name...). The edge
	// answers 400 for requests and 502 for upstream bodies.
	ErrInvalid = errors.New("respconv: invalid body")

	// ErrUpstreamFailed is returned by Stream.Event after it appended the
	// caller's in-band failure because the upstream reported an error inside
	// the stream (a chat `{"error":...}` frame, a Responses `error` or
	// `response.failed` event), and by the body converters for a body that
	// reports a failure. The stream is finished: write dst and stop.
	ErrUpstreamFailed = errors.New("respconv: the upstream reported an error")
)

// FieldError is the error the converters return: the field path in the
// caller's body (`input[3].content[0].type`) and the reason, wrapping one of
// the sentinels above. Error() builds the text only when called.
type FieldError struct {
	Field string // JSON path of the offending member; empty for the whole body
	Msg   string
	Err   error // ErrStateful, ErrUnsupported, ErrInvalid or ErrUpstreamFailed
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return "respconv: " + e.Msg
	}
	return "respconv: `" + e.Field + "`: " + e.Msg
}

func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(err error, field, msg string) error {
	return &FieldError{Field: field, Msg: msg, Err: err}
}

// path joins a field path with an array index: path("input", 3) = "input[3]".
// It runs on error paths only.
func path(base string, i int) string {
	return base + "[" + strconv.Itoa(i) + "]"
}

// fpath names a member for an error lazily, so that the happy path builds
// no strings: base[i] + sub, or with at, base[i] + sub + [j] + tail.
type fpath struct {
	base string
	i    int
	sub  string
}

func (p fpath) String() string { return path(p.base, p.i) + p.sub }

func (p fpath) at(j int, tail string) string { return path(p.String(), j) + tail }

// RequestOptions tune the request converters.
type RequestOptions struct {
	// UpstreamModel replaces the caller's model; empty keeps it.
	UpstreamModel string
}

// ResponseOptions tune the response-body converters.
type ResponseOptions struct {
	// Model is the caller-facing alias written as the response's model:
	// the plain alias, or its JSON string literal. Empty keeps the
	// upstream's model.
	Model []byte

	// Request is the caller's original Responses request body. Chat-to-
	// Responses conversion echoes its settings (instructions, tools,
	// tool_choice, temperature, top_p, text, reasoning, metadata, ...) in
	// the response object as the Responses API does; nil echoes defaults.
	// Unused by ResponsesResponseToChat.
	Request []byte
}

// ErrorCode maps an upstream failure to a transcode.Code* value. status is
// the upstream HTTP status, 0 for an error reported inside a stream. errObj
// is the OpenAI-style error object {"type","code","message"} or the whole
// envelope {"error":{...}}; nil or malformed falls back on status alone.
//
// In order: context length (code context_length_exceeded or a message about
// the maximum context length / context window) → CodeContextLength;
// insufficient_quota → CodeInsufficientQuota; rate limits (code
// rate_limit_exceeded, type rate_limit_error / requests / tokens, status 429)
// → CodeRateLimit; slow_down → CodeSlowDown; invalid_prompt, content policy
// → CodeInvalidPrompt; overload (server_is_overloaded, overloaded_error,
// status 503 or 529) → CodeOverloaded; timeouts (status 408 or 504, a
// timeout code) → CodeTimeout; other 4xx → CodeInvalidPrompt; anything else
// → CodeServerError.
func ErrorCode(status int, errObj []byte) string {
	if inner, kind, ok := rawjson.Get(errObj, "error"); ok && kind == rawjson.Object {
		errObj = inner
	}
	var v [3][]byte
	_ = rawjson.ScanTop(errObj, errKeys, v[:])
	typ, code, msg := v[0], v[1], v[2]
	is := func(s string) bool { return rawjson.StringEquals(code, s) || rawjson.StringEquals(typ, s) }
	switch {
	case is("context_length_exceeded") || containsAny(msg, "maximum context length", "context window", "context_length_exceeded", "too many tokens"):
		return transcode.CodeContextLength
	case is("insufficient_quota"):
		return transcode.CodeInsufficientQuota
	case is("rate_limit_exceeded") || is("rate_limit_error") || is("requests") || is("tokens") || status == 429:
		return transcode.CodeRateLimit
	case is("slow_down"):
		return transcode.CodeSlowDown
	case is("invalid_prompt") || is("content_policy_violation") || is("content_filter"):
		return transcode.CodeInvalidPrompt
	case is("server_is_overloaded") || is("overloaded_error") || is("overloaded") || status == 503 || status == 529:
		return transcode.CodeOverloaded
	case is("timeout") || is("stream_timeout") || status == 408 || status == 504:
		return transcode.CodeTimeout
	case status >= 400 && status < 500:
		return transcode.CodeInvalidPrompt
	}
	return transcode.CodeServerError
}

var errKeys = []string{"type", "code", "message"}

func containsAny(quoted []byte, subs ...string) bool {
	if len(quoted) < 2 {
		return false
	}
	for _, s := range subs {
		if indexFold(quoted, s) >= 0 {
			return true
		}
	}
	return false
}

// indexFold is an ASCII case-insensitive bytes.Index for a lower-case sub.
func indexFold(b []byte, sub string) int {
	for i := 0; i+len(sub) <= len(b); i++ {
		j := 0
		for ; j < len(sub); j++ {
			c := b[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return i
		}
	}
	return -1
}

// ResponsesErrorCode maps a transcode.Code* value (or an upstream Responses
// code) to the code a Responses caller sees in response.failed, from the
// spec's list. The six listed codes pass through. Everything else —
// server_error, upstream_stream_error, stream_timeout, unknown codes —
// becomes server_is_overloaded: it is the listed code for "the upstream
// could not finish, retry later", and clients such as Codex retry it. A
// stalled stream (stream_timeout) is the symptom of an overloaded upstream;
// slow_down is kept for explicit rate back-off signals, not timeouts.
func ResponsesErrorCode(code string) string {
	switch code {
	case transcode.CodeInvalidPrompt, transcode.CodeContextLength, transcode.CodeInsufficientQuota,
		transcode.CodeRateLimit, transcode.CodeOverloaded, transcode.CodeSlowDown,
		transcode.CodeContentFilter, transcode.CodeGuardrailUnavailable: // gateway rejections keep their code
		return code
	}
	return transcode.CodeOverloaded
}

// chatErrorType is the error.type a chat caller sees for a failure code;
// unknown codes come from the upstream and are server errors.
func chatErrorType(code string) string {
	if t := transcode.ChatErrorType(code); t != "" {
		return t
	}
	return "server_error"
}

// Usage helpers.

var chatUsageKeys = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}
var respUsageKeys = []string{"input_tokens", "output_tokens", "total_tokens", "input_tokens_details", "output_tokens_details"}

// parseUsage reads a chat (chat true) or Responses usage object.
func parseUsage(raw []byte, chat bool) (u transcode.Usage, ok bool) {
	if rawjson.KindOf(raw) != rawjson.Object {
		return u, false
	}
	keys := respUsageKeys
	if chat {
		keys = chatUsageKeys
	}
	var v [5][]byte
	if rawjson.ScanTop(raw, keys, v[:]) != nil {
		return u, false
	}
	u.Prompt = tokenCount(v[0])
	u.Completion = tokenCount(v[1])
	u.Total = tokenCount(v[2])
	if u.Total == 0 {
		u.Total = u.Prompt + u.Completion
	}
	if d, _, ok := rawjson.Get(v[3], "cached_tokens"); ok {
		u.Cached = tokenCount(d)
	}
	if d, _, ok := rawjson.Get(v[3], "cache_write_tokens"); ok {
		u.CacheCreation = tokenCount(d)
	}
	if d, _, ok := rawjson.Get(v[4], "reasoning_tokens"); ok {
		u.Reasoning = tokenCount(d)
	}
	return u, true
}

// tokenCount parses a JSON integer; 12.0 counts as 12, anything else as 0.
func tokenCount(raw []byte) int64 {
	if rawjson.KindOf(raw) != rawjson.Number {
		return 0
	}
	if n, ok := rawjson.ParseInt(raw); ok && n >= 0 {
		return n
	}
	if f, ok := rawjson.ParseFloat(raw); ok && f >= 0 && f < 1<<53 && f == float64(int64(f)) {
		return int64(f)
	}
	return 0
}

// appendResponsesUsage appends the Responses usage object for u.
func appendResponsesUsage(dst []byte, u *transcode.Usage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, u.Prompt, 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.Cached, 10)
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.Completion, 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, u.Reasoning, 10)
	dst = append(dst, `},"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.Total, 10)
	return append(dst, '}')
}

// appendChatUsage appends the chat-completions usage object for u.
func appendChatUsage(dst []byte, u *transcode.Usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, u.Prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.Completion, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.Total, 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.Cached, 10)
	dst = append(dst, `},"completion_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, u.Reasoning, 10)
	return append(dst, "}}"...)
}

// JSON helpers.

// isStr reports whether raw is one valid JSON string literal. Values copied
// from an upstream into caller output go through it, so malformed upstream
// bytes can never produce malformed caller JSON (rawjson's getters skip
// string contents leniently).
func isStr(raw []byte) bool {
	return rawjson.KindOf(raw) == rawjson.String && rawjson.Valid(raw)
}

// strBody returns the content of a string literal without its quotes.
func strBody(lit []byte) []byte { return lit[1 : len(lit)-1] }

// nonEmptyStr reports whether raw is a valid string literal with content.
func nonEmptyStr(raw []byte) bool { return len(raw) > 2 && isStr(raw) }

// appendModel appends model as a JSON string literal: model may already be
// one (the snapshot's AliasJSON) or the plain alias.
func appendModel(dst, model []byte) []byte {
	if isStr(model) {
		return append(dst, model...)
	}
	return rawjson.AppendQuoteBytes(dst, model)
}

// appendCompact appends the valid JSON value raw without whitespace outside
// strings, so that it fits on one SSE data line.
func appendCompact(dst, raw []byte) []byte {
	inStr := false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case ' ', '\t', '\n', '\r':
			dst = append(dst, raw[start:i]...)
			start = i + 1
		}
	}
	return append(dst, raw[start:]...)
}

// appendIDBase appends the id-safe part of the string literal lit ([A-Za-z0-9_-],
// at most 96 bytes) without its format prefix ("chatcmpl-", "resp_", or
// "msg_" for ids that began as Anthropic message ids); when nothing is left
// it appends 16 random hex digits, so ids stay non-empty.
func appendIDBase(dst, lit []byte) []byte {
	orig := len(dst)
	if len(lit) >= 2 && lit[0] == '"' {
		body := lit[1 : len(lit)-1]
		for _, strip := range [...]string{"chatcmpl-", "resp_", "msg_"} {
			if len(body) > len(strip) && string(body[:len(strip)]) == strip {
				body = body[len(strip):] // "chatcmpl-msg_…" loses both
			}
		}
		safe := len(body) <= 96
		for i := 0; safe && i < len(body); i++ {
			safe = idSafe(body[i])
		}
		if safe {
			// Fast path - the whole body is id-safe (every real id).
			dst = append(dst, body...)
		} else {
			for _, c := range body {
				if len(dst)-orig >= 96 {
					break
				}
				if idSafe(c) {
					dst = append(dst, c)
				}
			}
		}
	}
	if len(dst) == orig {
		n := rand.Uint64()
		for i := 60; i >= 0; i -= 4 {
			dst = append(dst, hexDigits[(n>>uint(i))&0xF])
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

func idSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// noCopy makes `go vet` flag copies of the pooled streams.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// maxPooledBuf caps the buffers a released stream keeps.
const maxPooledBuf = 256 << 10

func trimBuf(b []byte) []byte {
	if cap(b) > maxPooledBuf {
		return nil
	}
	return b[:0]
}
