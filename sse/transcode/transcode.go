// Package transcode holds what every wire-format transcoder shares: the
// streaming interface, the usage record and the failure codes. The
// transcoders themselves live in sibling packages, one per format pair
// (sse/msgconv: chat completions ⇄ Anthropic messages; sse/respconv: chat
// completions ⇄ OpenAI Responses), each file named by direction.
//
// A transcoder never imports edge, admin or adapters: it takes bytes and
// plain options and appends bytes, so the edge can drive it over pooled
// buffers without allocating per event.
package transcode

// Usage is the token usage a stream or body reported, in chat-completions
// terms: Prompt includes Cached (and cache-creation tokens), Completion
// includes Reasoning.
type Usage struct {
	Prompt        int64
	Completion    int64
	Total         int64
	Cached        int64 // prompt tokens read from the provider's cache
	CacheCreation int64 // prompt tokens written to the provider's cache (Anthropic)
	Reasoning     int64
}

// Stream converts one upstream SSE stream into the caller's format, one
// upstream event at a time. Implementations keep per-stream state (open
// content blocks, tool-call indexes, sequence numbers, usage) in a small
// struct that is pooled: Reset prepares it for a new stream.
//
// Every method appends complete, framed SSE events (`event: x\ndata: {...}\n\n`
// or `data: {...}\n\n`) to dst and returns it; dst is never retained.
// Steady-state events must not allocate.
type Stream interface {
	// Reset starts a new stream; model is the caller-facing alias written in
	// every event that carries a model.
	Reset(model []byte)
	// Event handles one upstream event (name may be empty for data-only
	// formats; data is the JSON payload, "[DONE]" included).
	Event(dst, name, data []byte) ([]byte, error)
	// End appends the caller format's clean ending once the upstream stream
	// ended without error (chat: data: [DONE]; messages: message_stop if not
	// sent yet; responses: response.completed if not sent yet).
	End(dst []byte) []byte
	// Fail appends the caller format's in-band failure after the stream has
	// been committed: chat an error data frame (no [DONE]); messages an
	// `error` event; responses `response.failed`. code is one of the Code*
	// constants; message is safe to show the caller.
	Fail(dst []byte, code, message string) []byte
	// Usage returns the usage seen so far (ok false until the upstream
	// reported any).
	Usage() (u Usage, ok bool)
	// Started reports whether an event with caller-visible content has been
	// produced (the edge's commit point).
	Started() bool
}

// Failure codes for Stream.Fail and the Responses bridge (spec errors 6).
const (
	CodeServerError        = "server_error"
	CodeTimeout            = "stream_timeout"
	CodeOverloaded         = "server_is_overloaded"
	CodeRateLimit          = "rate_limit_exceeded"
	CodeContextLength      = "context_length_exceeded"
	CodeInsufficientQuota  = "insufficient_quota"
	CodeInvalidPrompt      = "invalid_prompt"
	CodeSlowDown           = "slow_down"
	CodeUpstreamStreamFail = "upstream_stream_error"
	// Gateway rejections of a guardrail (spec "Errors" 3-4).
	CodeContentFilter        = "content_filter"
	CodeGuardrailUnavailable = "guardrail_unavailable"
)

// ChatErrorType is the chat-completions error envelope's `type` for a
// failure code, as OpenAI types them; "" for a code it does not know (the
// caller picks: server_error for upstream codes, invalid_request_error for
// gateway rejections).
func ChatErrorType(code string) string {
	switch code {
	case CodeRateLimit, CodeSlowDown:
		return "rate_limit_error"
	case CodeInsufficientQuota:
		return "insufficient_quota"
	case CodeContextLength, CodeInvalidPrompt:
		return "invalid_request_error"
	case CodeServerError, CodeTimeout, CodeOverloaded, CodeUpstreamStreamFail:
		return "server_error"
	}
	return ""
}
