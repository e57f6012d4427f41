package edge

import (
	"io"

	"github.com/valyala/fasthttp"

	"gw/adapters/anthropic"
	"gw/adapters/bedrock"
	"gw/adapters/vertex"
	"gw/sse"
	"gw/sse/msgconv"
)

// upProtocol is how the edge reads an upstream whose answers to chat calls
// are not in the chat-completions wire format (snapshot.Upstream.Protocol,
// the adapter's Protocoler answer). A new upstream protocol is one entry in
// upProtocols; the buffered path, the relay and the output policy only ever
// see chat completions.
type upProtocol struct {
	// toChat converts a buffered answer into a chat completion whose model
	// is alias (a JSON string literal).
	toChat func(dst, body, alias []byte) ([]byte, error)
	// acquire returns pooled per-stream state turning the upstream's events
	// into chat-chunk frames ("data: {...}\n\n"); release gives it back.
	acquire func(alias []byte) upStream
	release func(upStream)
	// source reads a stream body's events; nil means the body is SSE. A
	// binary framing (for example AWS event streams) decodes each message
	// into an sse.Event (Name: the event type, Data: its payload) here.
	source func(body io.Reader) eventSource
	// closeSource releases what source returned (nil: nothing to release).
	closeSrc func(eventSource)
	// nativeSource reads the stream body of a native call (the caller's
	// surface served by the upstream itself) when it is not SSE: Bedrock's
	// InvokeModelWithResponseStream wraps Messages events in event-stream
	// chunks. nil: native streams are SSE. closeNative releases it.
	nativeSource func(body io.Reader) eventSource
	closeNative  func(eventSource)
}

// upStream converts one upstream stream's events into chat-chunk frames.
type upStream interface {
	// Event appends the chat frames event (name, data) converts to.
	Event(dst, name, data []byte) ([]byte, error)
	// End appends what a clean end of the upstream stream adds.
	End(dst []byte) []byte
	// Err is the in-band error the upstream reported (its frame already
	// converted), nil if none.
	Err() error
}

// eventSource yields a stream body's events; *sse.Reader is the SSE one.
type eventSource interface {
	// Next returns the next event; its bytes are valid until the next call.
	Next() (sse.Event, error)
	// Pending reports whether an event is ready without reading.
	Pending() bool
}

// upProtocols lists the upstream protocols other than chat completions.
var upProtocols = map[string]*upProtocol{
	anthropic.ProtocolMessages: {
		toChat: func(dst, body, alias []byte) ([]byte, error) {
			out, _, err := msgconv.MessagesResponseToChat(dst, body, alias)
			return out, err
		},
		acquire: func(alias []byte) upStream { return msgconv.AcquireMessagesToChatStream(alias) },
		release: func(s upStream) { msgconv.ReleaseMessagesToChatStream(s.(*msgconv.MessagesToChatStream)) },
	},
	bedrock.ProtocolConverse: bedrockConverse,
	vertex.ProtocolGemini:    {toChat: geminiToChat, acquire: geminiAcquire, release: geminiRelease},
}

// errStatuser is implemented by upStream converters that know the HTTP
// status an in-band error stands for (Bedrock's exception frames: 429 for
// throttlingException ...): answered, and failed over, like that status
// when the error comes before the commit point.
type errStatuser interface{ ErrStatus() int }

// errStatus is the status of an in-band error frame seen before the commit
// point: the converter's, or 502.
func (s *relayState) errStatus() int {
	if es, ok := s.up.(errStatuser); ok {
		if st := es.ErrStatus(); st != 0 {
			return st
		}
	}
	return fasthttp.StatusBadGateway
}

// protocolOf returns the protocol entry of an upstream (nil: chat
// completions).
func protocolOf(name string) *upProtocol {
	if name == "" {
		return nil
	}
	return upProtocols[name]
}

// openSource returns the event source of a stream body; native says the
// call is native (see nativeSource).
func (pr *upProtocol) openSource(body io.Reader, native bool) eventSource {
	if native {
		if pr != nil && pr.nativeSource != nil {
			return pr.nativeSource(body)
		}
		return sse.AcquireReader(body)
	}
	if pr == nil || pr.source == nil {
		return sse.AcquireReader(body)
	}
	return pr.source(body)
}

// closeSource releases what openSource returned.
func (pr *upProtocol) closeSource(src eventSource, native bool) {
	if native {
		if pr != nil && pr.nativeSource != nil {
			pr.closeNative(src)
		} else {
			sse.ReleaseReader(src.(*sse.Reader))
		}
		return
	}
	if pr == nil || pr.source == nil {
		sse.ReleaseReader(src.(*sse.Reader))
		return
	}
	if pr.closeSrc != nil {
		pr.closeSrc(src)
	}
}
