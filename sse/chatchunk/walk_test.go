package chatchunk

import (
	"testing"
)

func acceptZero(index []byte) bool { return index == nil || string(index) == "0" }

// TestWalk: the members read from a chunk, then from the next chunk of the
// stream through the repeated-prefix resume (its own id, created and model
// spans, not the first chunk's), and a changed prefix read in full.
func TestWalk(t *testing.T) {
	var w Walker
	var ck Chunk
	first := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	if !w.Walk(first, &ck, acceptZero) || string(ck.ID) != `"chatcmpl-1"` || string(ck.Created) != "7" || string(ck.Model) != `"m"` ||
		!ck.Choice || !ck.DeltaObject || string(ck.Content) != `""` || string(ck.Finish) != "null" {
		t.Fatalf("first chunk: %+v", ck)
	}
	if want := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m",`; string(w.prefix) != want {
		t.Fatalf("prefix = %s", w.prefix)
	}
	next := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes","tool_calls":[]},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`)
	if !w.Walk(next, &ck, acceptZero) || &ck.ID[0] != &next[6] || string(ck.Content) != `"yes"` || string(ck.Finish) != `"stop"` ||
		string(ck.ToolCalls) != "[]" || string(ck.Usage) != `{"prompt_tokens":1}` {
		t.Fatalf("resumed chunk: %+v", ck)
	}
	other := []byte(`{"id":"chatcmpl-2","choices":[],"error":{"message":"x"}}`)
	if !w.Walk(other, &ck, acceptZero) || string(ck.ID) != `"chatcmpl-2"` || ck.Choice || !ck.Choices || string(ck.Error) != `{"message":"x"}` {
		t.Fatalf("other chunk: %+v", ck)
	}
	if !w.Walk(next, &ck, acceptZero) || string(ck.Content) != `"yes"` {
		t.Fatalf("chunk after a changed prefix: %+v", ck)
	}
	for _, bad := range []string{`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m",}`, `{"choices":[{"delta":{"content":"x"]}}]}`, `[]`, ``} {
		if w.Walk([]byte(bad), &ck, acceptZero) {
			t.Errorf("walk accepts %s", bad)
		}
	}
}

// TestWalkAllocs: reading a chunk allocates nothing.
func TestWalkAllocs(t *testing.T) {
	var w Walker
	var ck Chunk
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"c\u006fntent":"x"},"finish_reason":null}]}`)
	if a := testing.AllocsPerRun(100, func() { w.Walk(data, &ck, acceptZero) }); a != 0 {
		t.Fatalf("%v allocations per walk; want 0", a)
	}
}
