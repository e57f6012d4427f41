package edge

import (
	"io"

	"gw/adapters/bedrock"
	"gw/sse/converse"
)

// bedrockConverse reads AWS Bedrock Converse answers: buffered bodies, and
// ConverseStream's binary event-stream framing decoded into events
// (converse.Source) that converse.ToChatStream turns into chat chunks.
// Messages callers on Claude models are native (adapters/bedrock
// BuildNative): buffered answers are Messages bodies, streams Messages
// events in event-stream chunks (bedrock.InvokeSource).
var bedrockConverse = &upProtocol{
	toChat: func(dst, body, alias []byte) ([]byte, error) {
		out, _, err := converse.ResponseToChat(dst, body, alias)
		return out, err
	},
	acquire:  func(alias []byte) upStream { return converse.AcquireToChatStream(alias) },
	release:  func(s upStream) { converse.ReleaseToChatStream(s.(*converse.ToChatStream)) },
	source:   func(body io.Reader) eventSource { return converse.AcquireSource(body) },
	closeSrc: func(src eventSource) { converse.ReleaseSource(src.(*converse.Source)) },
	// Native Messages on Claude models (InvokeModelWithResponseStream): the
	// Messages events inside the chunk frames, relayed as they are.
	nativeSource: func(body io.Reader) eventSource { return bedrock.AcquireInvokeSource(body) },
	closeNative:  func(src eventSource) { bedrock.ReleaseInvokeSource(src.(*bedrock.InvokeSource)) },
}
