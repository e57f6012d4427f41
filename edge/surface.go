package edge

import (
	"github.com/valyala/fasthttp"

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
)
