package adapters

import (
	"errors"

	"github.com/valyala/fasthttp"

	"gw/adapters/headers"
)

// Adapter turns a caller request into an upstream request for one provider
// key. It is compiled once per provider key when a snapshot is compiled, is
// immutable, and is safe for concurrent use.
//
// Capabilities beyond chat completions (embeddings, messages, responses, a
// stream transcoder) will be separate small interfaces that an adapter may
// also implement, resolved when the snapshot is compiled, never per request.
type Adapter interface {
	// BuildChat writes the upstream request for the chat-completions caller
	// request in into req: method, full URL, headers (credential,
	// content-type, default and forwarded headers) and body. req must be
	// empty (fresh from fasthttp.AcquireRequest, or Reset). in and in.Body
	// are not retained after BuildChat returns. On error req is left
	// partially written and must be Reset before reuse.
	BuildChat(req *fasthttp.Request, in *ChatInput) error
}

// ChatInput is one chat-completions call as the edge hands it to an adapter.
// The edge owns it; a pooled value may be reused once BuildChat returns.
type ChatInput struct {
	// Body is the caller's JSON body, already checked with rawjson.Valid by
	// the edge. BuildChat reads it and never writes to it.
	Body []byte
	// UpstreamModel is the direct model's model_name, sent as `model`.
	UpstreamModel string
	// Provider is the direct model's `provider`; "" falls back to the
	// provider key's. It decides the developer-role and max_tokens rules.
	Provider string
	// Stream is true when the caller asked for a stream.
	Stream bool
	// ForceUsage asks the upstream for a usage chunk
	// (stream_options.include_usage) on streams; the edge strips the extra
	// chunk (openai.IsUsageOnlyChunk) when the caller did not ask for it.
	ForceUsage bool
	// Vars are the per-request values of default-header variables.
	Vars headers.Vars
	// ClientHeaders are the caller's request headers; nil forwards none.
	ClientHeaders *fasthttp.RequestHeader
	// CallerCredential names the header slot(s) that carried the caller's gw
	// key (authorization or x-api-key); they are never relayed upstream even
	// when forward_client_headers names them.
	CallerCredential headers.Slots
	// PromptCacheTTL is the target model's auto_prompt_caching ttl ("5m",
	// "1h"), "" when off. Messages-protocol adapters add cache breakpoints.
	PromptCacheTTL string
	// Shape is what the edge's scan of Body found, sparing BuildChat a
	// pass of its own; the zero value knows nothing.
	Shape BodyShape
}

// BodyShape is what the edge learned about a chat body while validating it.
type BodyShape struct {
	// NoThinkingBlocks: no message has a thinking_blocks member. False
	// means unknown.
	NoThinkingBlocks bool
	// Model is the raw value of the body's top-level "model" member (a
	// subslice of the body) when it is the only one; nil means unknown.
	Model []byte
}

// Surface is a caller-facing wire format other than chat completions that a
// provider key's endpoint may serve natively.
type Surface uint8

// Surfaces. The zero value is chat completions (never "native": every
// adapter builds chat calls with BuildChat).
const (
	SurfaceChat        Surface = iota
	SurfaceResponses           // POST /v1/responses
	SurfaceMessages            // POST /v1/messages
	SurfaceCountTokens         // POST /v1/messages/count_tokens (native with messages)
	NumSurfaces
)

// NativeBuilder is implemented by adapters whose endpoint serves some caller
// surfaces in the caller's own wire format (the `apis` rules of provider
// keys): the caller's body goes upstream unchanged but for `model`, so
// thinking blocks and their signatures, cache_control, encrypted reasoning
// and beta fields reach the upstream as sent.
type NativeBuilder interface {
	// NativeBase returns the base URL of surface s when the key serves it
	// natively, "" when s is converted to chat completions.
	NativeBase(s Surface) string
	// BuildNative writes the upstream request for a body in surface s's
	// wire format (in.Body). The rest of in is as for BuildChat.
	BuildNative(req *fasthttp.Request, in *ChatInput, s Surface) error
}

// NativeModeler is implemented by NativeBuilders whose native surfaces
// serve only some of the key's models (Bedrock: Messages natively for Claude
// models only); the others are converted as when NativeBase is "".
type NativeModeler interface {
	NativeModel(s Surface, model string) bool
}

// Protocoler is implemented by adapters whose upstream does not answer in
// the chat-completions wire format; the edge converts their answers.
type Protocoler interface {
	Protocol() string
}

// Options are deployment-wide settings for adapter construction. The zero
// value is valid.
type Options struct {
	// AzureAPIVersion is the api-version sent on the dated Azure surface when
	// api_base carries none; "" means DefaultAzureAPIVersion.
	AzureAPIVersion string
}

// DefaultAzureAPIVersion is the GA api-version of the dated Azure OpenAI
// surface.
const DefaultAzureAPIVersion = "2024-10-21"

// Usage is the token usage an upstream reported.
type Usage struct {
	Prompt     int64 // includes Cached
	Completion int64 // includes Reasoning
	Total      int64
	Cached     int64
	Reasoning  int64
}

// Errors shared by adapters. Callers compare with errors.Is.
var (
	// ErrBody means the caller body is not a JSON object the adapter can
	// edit; the edge answers 400.
	ErrBody = errors.New("adapters: request body is not a JSON object")
	// ErrUnsupported means the adapter family is not implemented.
	ErrUnsupported = errors.New("adapters: adapter not implemented")
	// ErrConfig means the provider key cannot be compiled for this adapter.
	ErrConfig = errors.New("adapters: invalid provider key for this adapter")
	// ErrCredential means the provider credential cannot be obtained now
	// (an OAuth token endpoint or an instance-role lookup failed): the
	// attempt fails like an unreachable upstream, so failover applies.
	ErrCredential = errors.New("adapters: cannot obtain the provider credential")
)
