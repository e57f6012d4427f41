//go:build !race

package load

import "testing"

func TestDeltaHasContentAllocs(t *testing.T) {
	data := []byte(`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`)
	if n := testing.AllocsPerRun(100, func() { deltaHasContent(data) }); n != 0 {
		t.Fatalf("got %g allocs; want 0", n)
	}
}

func TestClassifyAllocs(t *testing.T) {
	f := func(name string, classify func([]byte) eventKind, data string, want eventKind) {
		t.Helper()
		b := []byte(data)
		if got := classify(b); got != want {
			t.Fatalf("%s: got %d; want %d", name, got, want)
		}
		if n := testing.AllocsPerRun(100, func() { classify(b) }); n != 0 {
			t.Fatalf("%s: got %g allocs; want 0", name, n)
		}
	}
	f("chat", classifyChat, `{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`, evContent)
	f("chat done", classifyChat, `[DONE]`, evEnd)
	f("messages", classifyMessages, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, evContent)
	f("messages stop", classifyMessages, `{"type":"message_stop"}`, evEnd)
	f("responses", classifyResponses, `{"type":"response.output_text.delta","sequence_number":4,"delta":"Hi","logprobs":[]}`, evContent)
	f("responses completed", classifyResponses, `{"type":"response.completed","response":{"status":"completed"}}`, evEnd)
}
