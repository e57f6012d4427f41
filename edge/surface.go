package edge

import (
	"github.com/valyala/fasthttp"

	"strconv"

	"gw/sse/msgconv"
	"gw/sse/rawjson"
	"gw/sse/respconv"
	"gw/sse/transcode"
)

// surface is a caller-facing wire format. Chat completions is native: the
// upstream speaks it and bodies pass through with `model` rewritten. Other
// surfaces convert the request to chat completions on the way in and the
// answer back on the way out.
type surface struct {
	path      string // for the access log
	protocol  string // usage events: inbound_protocol
	operation string // usage events: operation
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
	surfChat = &surface{path: pathChat, protocol: "chat_completions", operation: "chat.completions"}

	surfResponses = &surface{
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
	}

	surfMessages = &surface{
		path: pathMessages, protocol: "messages", operation: "messages",
		fromChat: func(dst, body []byte, c *call) ([]byte, transcode.Usage, error) {
			return msgconv.ChatResponseToMessages(dst, body, c.plan.AliasBytes)
		},
		newStream: func(c *call) transcode.Stream {
			return msgconv.AcquireChatToMessagesStream(c.plan.AliasBytes)
		},
		releaseStream: func(s transcode.Stream) {
			msgconv.ReleaseChatToMessagesStream(s.(*msgconv.ChatToMessagesStream))
		},
		errorEnvelope: writeAnthropicError,
		relayError:    relayAnthropicError,
	}
)

// anthropicErrorType maps a status to Anthropic's error.type.
func anthropicErrorType(status int) string {
	switch status {
	case 400, 422:
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
