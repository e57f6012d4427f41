//go:build !race

package gemini

import (
	"testing"
)

// TestStreamAllocs: after warm-up a whole stream, End included, allocates
// nothing; so does a buffered answer's conversion.
func TestStreamAllocs(t *testing.T) {
	s := AcquireToChatStream(nil)
	defer ReleaseToChatStream(s)
	dst := make([]byte, 0, 64<<10)
	alias := []byte("my-alias")
	for _, f := range []string{"../testdata/gemini_stream_text.sse", "../testdata/gemini_stream_function_call.sse",
		"testdata/synthetic_thinking_parallel_calls.sse", "testdata/synthetic_safety_finish.sse", "testdata/synthetic_prompt_blocked.sse"} {
		evs := readEvents(t, f)
		run := func() {
			s.Reset(alias)
			out := dst[:0]
			for _, d := range evs {
				var err error
				if out, err = s.Event(out, nil, d); err != nil {
					t.Fatal(err)
				}
			}
			if out = s.End(out); len(out) == 0 {
				t.Fatal("no output")
			}
		}
		run()
		if n := testing.AllocsPerRun(100, run); n != 0 {
			t.Fatalf("%s: %v allocs per stream; want 0", f, n)
		}
	}
	body := []byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi","thought":true},{"text":"Hello"},{"functionCall":{"name":"f","args":{"a":1}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},"responseId":"r1"}`)
	buf := make([]byte, 0, 4096)
	conv := func() {
		if _, _, err := ResponseToChat(buf[:0], body, alias); err != nil {
			t.Fatal(err)
		}
	}
	conv()
	if n := testing.AllocsPerRun(100, conv); n != 0 {
		t.Fatalf("ResponseToChat: %v allocs; want 0", n)
	}
}
