//go:build !race

package mock

import (
	"bufio"
	"io"
	"testing"
)

// TestRenderAllocs guards the zero-allocation render path: once pools are warm, parsing a
// request and rendering its whole answer allocates nothing.
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
	streamBody, toolsBody, bufferedBody := []byte(renderStreamBody), []byte(renderToolsBody), []byte(renderBufferedBody)
	k := s.defaults
	f("stream", func() { renderStream(s, &k, w, streamBody) })
	tools := s.defaults
	tools.ToolCalls = 3
	f("tool calls", func() { renderStream(s, &tools, w, toolsBody) })
	var dst []byte
	f("buffered", func() { dst = renderBuffered(s, &k, dst, bufferedBody) })
}
