package edge

import (
	"gw/sse/gemini"
)

// The Gemini protocol (adapters/vertex keys serving Gemini models): buffered
// GenerateContentResponse bodies and streamGenerateContent?alt=sse events
// become chat completions (sse/gemini). Gemini streams are SSE, so the entry
// needs no source.

func geminiToChat(dst, body, alias []byte) ([]byte, error) {
	out, _, err := gemini.ResponseToChat(dst, body, alias)
	return out, err
}

func geminiAcquire(alias []byte) upStream { return gemini.AcquireToChatStream(alias) }

func geminiRelease(s upStream) { gemini.ReleaseToChatStream(s.(*gemini.ToChatStream)) }
