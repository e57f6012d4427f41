//go:build !race

package mock

import (
	"bufio"
	"io"
	"testing"
)

// TestRenderAllocs guards the zero-allocation render path: once pools are warm, parsing a
// request and rendering its whole answer allocates nothing, in every wire format.
func TestRenderAllocs(t *testing.T) {
	s := New(Config{RecordLimit: -1})
	w := bufio.NewWriter(io.Discard)
	f := func(name string, run func()) {
		t.Helper()
		run()
		if n := testing.AllocsPerRun(100, run); n != 0 {
			t.Fatalf("%s: got %v allocs per answer; want 0", name, n)
		}
	}
	k := s.defaults
	tools := s.defaults
	tools.ToolCalls = 3
	streamErr := s.defaults
	streamErr.StreamError, streamErr.StreamErrorAfter = true, 2
	var dst []byte

	// Chat Completions.
	streamBody, toolsBody, bufferedBody := []byte(renderStreamBody), []byte(renderToolsBody), []byte(renderBufferedBody)
	f("stream", func() { renderStream(s, &k, w, streamBody) })
	f("tool calls", func() { renderStream(s, &tools, w, toolsBody) })
	f("stream error", func() { renderStream(s, &streamErr, w, streamBody) })
	f("buffered", func() { dst = renderBuffered(s, &k, dst, bufferedBody) })

	// Anthropic Messages.
	msgBody, msgToolsBody := []byte(renderMessagesBody), []byte(renderMessagesToolsBody)
	f("messages stream", func() { renderMessagesStream(s, &k, w, msgBody) })
	f("messages tool calls", func() { renderMessagesStream(s, &tools, w, msgToolsBody) })
	f("messages stream error", func() { renderMessagesStream(s, &streamErr, w, msgBody) })
	f("messages buffered", func() { dst = renderMessagesBuffered(s, &k, dst, msgBody) })
	f("messages buffered tool calls", func() { dst = renderMessagesBuffered(s, &tools, dst, msgToolsBody) })

	// OpenAI Responses.
	respBody, respToolsBody := []byte(renderResponsesBody), []byte(renderResponsesToolsBody)
	f("responses stream", func() { renderResponsesStream(s, &k, w, respBody) })
	f("responses tool calls", func() { renderResponsesStream(s, &tools, w, respToolsBody) })
	f("responses stream error", func() { renderResponsesStream(s, &streamErr, w, respBody) })
	f("responses buffered", func() { dst = renderResponsesBuffered(s, &k, dst, respBody) })
	f("responses buffered tool calls", func() { dst = renderResponsesBuffered(s, &tools, dst, respToolsBody) })
}
