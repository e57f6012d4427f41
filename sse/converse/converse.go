// Package converse converts between OpenAI chat completions and the AWS
// Bedrock Converse API (protocols.md §5): a chat request becomes a Converse
// request (ChatRequestToConverse), a buffered Converse answer becomes a
// chat completion (ResponseToChat), and a ConverseStream event stream
// (decoded from its binary framing by Source) becomes chat-completion
// chunks (ToChatStream). The chat → Messages and chat → Responses
// transcoders then serve the other caller formats, as for every upstream.
//
// # Decisions
//
//   - The request goes through the Messages conversion first
//     (msgconv.ChatRequestToMessages), so system and developer messages,
//     tools, tool results, images and reasoning follow exactly the rules
//     Anthropic upstreams get; the Messages body is then rewritten into
//     Converse's shape. system and developer messages (wherever they are)
//     become the `system` blocks, as the spec's developer-role table says.
//   - maxTokens is sent only when the caller set max_tokens or
//     max_completion_tokens (Converse does not require it, unlike Messages).
//   - reasoning_effort (or a chat `thinking` object) becomes
//     additionalModelRequestFields.thinking only for Anthropic models
//     (model ids containing "anthropic." or "claude"): the other Bedrock
//     model families reject unknown fields there. For them it is dropped.
//   - tool_choice none has no Converse form: toolChoice is omitted (the
//     model decides), and the tools are still sent because a conversation
//     holding tool calls must declare them.
//   - Stop reasons: end_turn and stop_sequence → stop; max_tokens and
//     model_context_window_exceeded → length; tool_use → tool_calls;
//     guardrail_intervened and content_filtered → content_filter;
//     malformed_model_output and malformed_tool_use → stop (the partial
//     answer is delivered as it is); unknown → stop.
//   - Usage: prompt_tokens = inputTokens + cacheReadInputTokens +
//     cacheWriteInputTokens (Bedrock, like Anthropic, counts them apart);
//     cached_tokens = cacheReadInputTokens.
//   - Reasoning signatures and redacted reasoning have no chat form and are
//     dropped; reasoning text becomes reasoning_content.
//   - Stream exceptions map to HTTP statuses (ExceptionStatus) before the
//     commit point and to chat error frames after it.
package converse

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"gw/sse/transcode"
)

// Errors. Conversion errors wrap ErrInvalidRequest (answer 400) or
// ErrInvalidResponse (answer 502).
var (
	ErrInvalidRequest  = errors.New("converse: invalid request")
	ErrInvalidResponse = errors.New("converse: invalid upstream response")
	// ErrMalformedEvent is returned by ToChatStream.Event for an event whose
	// payload is not a JSON object; nothing was appended.
	ErrMalformedEvent = errors.New("converse: malformed upstream event")
)

// FinishReason maps a Converse stopReason to a chat finish_reason.
func FinishReason(stopReason []byte) string {
	switch string(stopReason) {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return "stop"
}

// ExceptionStatus returns the HTTP status and the failure code (a
// transcode.Code* constant) of a Bedrock exception type, as the stream's
// `:exception-type` header or the x-amzn-ErrorType header names it (either
// spelling: throttlingException or ThrottlingException).
func ExceptionStatus(typ []byte) (int, string) {
	if len(typ) > 0 && typ[0] >= 'A' && typ[0] <= 'Z' {
		var b [64]byte
		n := copy(b[:], typ)
		b[0] += 'a' - 'A'
		typ = b[:n]
	}
	switch string(typ) {
	case "throttlingException", "modelNotReadyException":
		return 429, transcode.CodeRateLimit
	case "serviceUnavailableException":
		return 503, transcode.CodeOverloaded
	case "validationException":
		return 400, transcode.CodeInvalidPrompt
	case "accessDeniedException":
		return 403, transcode.CodeServerError
	case "resourceNotFoundException":
		return 404, transcode.CodeServerError
	case "modelTimeoutException":
		return 504, transcode.CodeTimeout
	case "internalServerException":
		return 500, transcode.CodeServerError
	}
	// modelStreamErrorException, modelErrorException, unmodeled errors.
	return 502, transcode.CodeUpstreamStreamFail
}

// chatErrorType is the chat error envelope's type for a failure code.
func chatErrorType(code string) string {
	if t := transcode.ChatErrorType(code); t != "" {
		return t
	}
	return "invalid_request_error"
}

var idSeq atomic.Uint64

// appendID appends a chat completion id; Converse answers carry none.
func appendID(dst []byte) []byte {
	dst = append(dst, "chatcmpl-gw"...)
	return strconv.AppendUint(dst, uint64(time.Now().UnixNano())^idSeq.Add(1)<<40, 16)
}

// noCopy makes `go vet` flag copies of pooled values.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// keep returns b emptied, or nil when it grew too large to pool.
func keep(b []byte) []byte {
	if cap(b) > 64<<10 {
		return nil
	}
	return b[:0]
}
