package edge

import (
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
