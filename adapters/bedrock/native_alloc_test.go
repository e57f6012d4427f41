//go:build !race

package bedrock

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// TestInvokeSourceAllocs: after warm-up, reading a whole chunk stream
// (decode, CRCs, base64) allocates nothing.
func TestInvokeSourceAllocs(t *testing.T) {
	fx, err := os.ReadFile("testdata/anthropic_thinking_then_text.sse")
	if err != nil {
		t.Fatal(err)
	}
	frames, evs := chunkFrames(t, fx)
	var rd bytes.Reader
	s := AcquireInvokeSource(nil)
	defer ReleaseInvokeSource(s)
	run := func() {
		rd.Reset(frames)
		s.Reset(&rd)
		n := 0
		for {
			if _, err := s.Next(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != len(evs) {
			t.Fatalf("%d events; want %d", n, len(evs))
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocs per stream of %d events; want 0", n, len(evs))
	}
}
