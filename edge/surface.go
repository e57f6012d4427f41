package edge

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/edge/guard"
	"gw/sse"
	"gw/sse/msgconv"
	"gw/sse/rawjson"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// surface is a caller-facing wire format. Chat completions is native: the
// upstream speaks it and bodies pass through with `model` rewritten. Other
// surfaces are native on upstreams that serve them (the `apis` rules,
// snapshot.Upstream.Native) and otherwise convert the request to chat
// completions on the way in and the answer back on the way out.
type surface struct {
	// read is the pipeline's read stage for this surface: the body, and its
	// chat form for policy (false after answering).
	read func(ctx *fasthttp.RequestCtx, c *call) bool
	// unlimited skips the limits stage (count_tokens generates no tokens).
	unlimited bool
	// noOutput: the answer has no completion tokens (embeddings, rerank),
	// so a token reservation is the prompt estimate alone.
	noOutput bool
	// guardIn is the request's shape for the input policy; guardNative the
	// shape of an answer the upstream gives natively (output policy).
	guardIn, guardNative guard.Format
	guardStream          guard.NativeFormat // a native stream's events
	path                 string             // for the access log
	protocol             string             // usage events: inbound_protocol
	operation            string             // usage events: operation
	// fromChat converts a buffered chat-completions answer (nil: native).
	fromChat func(dst, body []byte, c *call) ([]byte, transcode.Usage, error)
	// newStream returns a pooled chat-chunk → caller-format transcoder
	// (nil: native); releaseStream gives it back.
	newStream     func(c *call) transcode.Stream
	releaseStream func(transcode.Stream)
	// errorEnvelope writes gw's own errors in the surface's shape (nil:
	// OpenAI's); relayError rewrites an upstream error (nil: relayed as is).
	errorEnvelope errorWriter
	relayError    func(ctx *fasthttp.RequestCtx, status int, body []byte)

	// endpoint is the caller endpoint beyond chat this surface is
	// (endpoints.go); EndpointNone for the chat-shaped surfaces. Its body
	// always goes upstream as is but for `model`.
	endpoint adapters.Endpoint
	// binary: the answer is a byte stream relayed as it arrives
	// (binary.go), never read whole; output guardrails cannot read it.
	binary bool
	// dispatch replaces the dispatch stage's buffered/stream choice (nil:
	// the usual one).
	dispatch func(p *Proxy, ctx *fasthttp.RequestCtx, c *call)

	// native is the surface an upstream may serve natively
	// (adapters.SurfaceChat: none). On such an upstream the caller's body
	// goes upstream as is and the answer comes back as is, but for `model`.
	native adapters.Surface
	// nativeUsage reads a native buffered answer's usage (nil: none).
	nativeUsage func(body []byte) (adapters.Usage, bool)
	// nativeEvent reads one event of a native stream into s.out;
	// nativeFail ends a native stream gw cuts short (code: transcode.Code*);
	// nativeErrBody turns an error event that opened a stream into the
	// error body of a failed attempt.
	nativeEvent   func(s *relayState, c *call, ev sse.Event) evFlags
	nativeFail    func(dst []byte, s *relayState, c *call, code string) []byte
	nativeErrBody func(data []byte) []byte
}

// errorWriter writes a caller-facing error.
type errorWriter func(ctx *fasthttp.RequestCtx, status int, typ, code, message string)

// writeError writes an error in the surface's envelope.
func (s *surface) writeError(ctx *fasthttp.RequestCtx, status int, typ, code, message string) {
	if s.errorEnvelope != nil {
		s.errorEnvelope(ctx, status, typ, code, message)
		return
	}
	WriteError(ctx, status, typ, code, message)
}

var (
	surfChat = &surface{read: readChat, guardIn: guard.ChatRequest, guardNative: guard.ChatAnswer, path: pathChat, protocol: "chat_completions", operation: "chat.completions"}

	surfResponses = &surface{
		read: readResponses, guardIn: guard.ResponsesRequest, guardNative: guard.ResponsesAnswer, guardStream: guard.NativeResponses,
		path: pathResponses, protocol: "responses", operation: "responses",
		fromChat: func(dst, body []byte, c *call) ([]byte, transcode.Usage, error) {
			return respconv.ChatResponseToResponses(dst, body, respconv.ResponseOptions{Model: c.plan.AliasJSON, Request: c.origBody})
		},
		newStream: func(c *call) transcode.Stream {
			s := respconv.NewChatToResponsesStream()
			s.Reset(c.plan.AliasJSON)
			s.(*respconv.ChatToResponses).SetRequest(c.origBody)
			return s
		},
		releaseStream: respconv.ReleaseStream,
		native:        adapters.SurfaceResponses,
		nativeUsage:   responsesUsage,
		nativeEvent:   responsesEvent,
		nativeFail:    responsesFail,
		nativeErrBody: responsesErrBody,
	}

	surfMessages = &surface{
		read: readMessages, guardIn: guard.MessagesRequest, guardNative: guard.MessagesAnswer, guardStream: guard.NativeMessages,
		path: pathMessages, protocol: "messages", operation: "messages",
		fromChat: func(dst, body []byte, c *call) ([]byte, transcode.Usage, error) {
			return msgconv.ChatResponseToMessages(dst, body, c.plan.AliasBytes)
		},
		newStream: func(c *call) transcode.Stream {
			s := msgconv.AcquireChatToMessagesStream(c.plan.AliasBytes)
			s.SetInputEstimate(int64(max(1, len(c.origBody)/4))) // exact counts follow in message_delta
			return s
		},
		releaseStream: func(s transcode.Stream) {
			msgconv.ReleaseChatToMessagesStream(s.(*msgconv.ChatToMessagesStream))
		},
		errorEnvelope: writeAnthropicError,
		relayError:    relayAnthropicError,
		native:        adapters.SurfaceMessages,
		nativeUsage:   messagesUsage,
		nativeEvent:   messagesEvent,
		nativeFail:    messagesFail,
		nativeErrBody: messagesErrBody,
	}

	// surfCount is /v1/messages/count_tokens: forwarded to upstreams that
	// serve Messages natively, answered with gw's estimate otherwise.
	surfCount = &surface{
		read: readCount, unlimited: true, guardIn: guard.MessagesRequest,
		path: pathCount, protocol: "messages", operation: "messages.count_tokens",
		errorEnvelope: writeAnthropicError,
		relayError:    relayAnthropicError,
		native:        adapters.SurfaceCountTokens,
	}
)

// responsesUsage reads the usage of a Responses body in chat terms.
func responsesUsage(body []byte) (adapters.Usage, bool) {
	raw, kind, ok := rawjson.Get(body, "usage")
	if !ok || kind != rawjson.Object {
		return adapters.Usage{}, false
	}
	u, ok := respconv.ParseUsage(raw)
	return chatUsage(u), ok
}

// anthropicErrorType maps a status to Anthropic's error.type. A 501 (a
// capability this build or this provider lacks) is invalid_request_error on
// every surface, as on chat and Responses: the request asks for something
// that will not work however often it is sent, where api_error would say
// the server failed.
func anthropicErrorType(status int) string {
	switch status {
	case 400, 422, 501:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	case 504:
		return "timeout_error"
	}
	if status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}

// writeAnthropicError writes {"type":"error","error":{"type","message"}}, the
// Messages API's envelope, typed by status. gw's own code is kept in
// error.code (as the spec asks for guardrail rejections on /v1/messages).
func writeAnthropicError(ctx *fasthttp.RequestCtx, status int, _, code, message string) {
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	b := make([]byte, 0, 96+len(message))
	b = append(b, `{"type":"error","error":{"type":`...)
	b = rawjson.AppendQuote(b, anthropicErrorType(status))
	if code != "" {
		b = append(b, `,"code":`...)
		b = rawjson.AppendQuote(b, code)
	}
	b = append(b, `,"message":`...)
	b = rawjson.AppendQuote(b, message)
	b = append(b, "}}\n"...)
	ctx.SetBody(b)
}

// relayAnthropicError rewrites a chat-completions upstream's error (OpenAI
// envelope) into the Messages envelope, keeping status and message.
func relayAnthropicError(ctx *fasthttp.RequestCtx, status int, body []byte) {
	msg := "upstream returned " + strconv.Itoa(status) + " " + fasthttp.StatusMessage(status)
	if v, kind, ok := rawjson.GetPath(body, "error", "message"); ok && kind == rawjson.String {
		if m, err := rawjson.AppendUnquote(nil, v); err == nil && len(m) > 0 {
			msg = string(m)
		}
	}
	writeAnthropicError(ctx, status, "", "", msg)
}
