package edge

import (
	"bytes"
	"testing"

	"gw/adapters/openai"
	"gw/sse/rawjson"
)

// slowChunk is the three-pass edit editChunk replaces: nil for a
// usage-only chunk (which the slow path handles itself).
func slowChunk(data, alias []byte, dropUsage bool) []byte {
	if openai.IsUsageOnlyChunk(data) {
		return nil
	}
	if dropUsage {
		if d, err := rawjson.Delete(nil, data, "usage"); err == nil {
			data = d
		}
	}
	return openai.RewriteModel(nil, data, alias)
}

var chunkEditCases = []string{
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":null}`,
	`{"id":"c","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"hi"}}]}`,
	`{ "id" : "c" ,	"model" :"gpt-4o" , "usage" : null , "choices" : [ ] }`,
	`{"model":"gpt-4o","usage":null}`,
	`{"usage":null,"model":"gpt-4o","choices":[]}`,                                    // usage first: slow path
	`{"id":"c","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1}}`,            // usage-only
	`{"id":"c","model":"gpt-4o","choices":null,"usage":{"prompt_tokens":1}}`,          // usage-only
	`{"id":"c","model":"gpt-4o","usage":{"prompt_tokens":1}}`,                         // usage-only
	`{"id":"c","model":"gpt-4o","choices":[{"index":0}],"usage":{"prompt_tokens":1}}`, // usage with content
	`{"id":"c","choices":[]}`,                                                         // no model: slow path
	`{"id":"c","model":"a","model":"b"}`,                                              // duplicates: slow path
	`{"id":"c","m\u006fdel":"gpt-4o","usage":null}`,                                   // escaped key
	`{"id":"say \"model\": x","model":"gpt-4o","choices":[{"delta":{"content":"\"usage\":null"}}],"usage":null}`,
	`{"id":"c","model":"gpt-4o","usage":null,"choices":[],"x":{"usage":1}}`,
	`{"id":"c","MODEL":"gpt-4o","usAge":null,"Choices":[{"index":0}]}`, // names read under folding
	`{"id":"c","model":"gpt-4o","usAge":null,"0" : [0] }`,              // fuzz find: usage in capitals
	`{"id":"c","model":"gpt-4o","Model":"x"}`,                          // one name twice: slow path
	`[1,2]`,
	`{"id":"c","model":`,
	``,
	`{}`,
}

// TestEditChunkMatchesSlowPath: wherever editChunk answers, its output is
// the slow path's, byte for byte; where it declines, the slow path runs.
func TestEditChunkMatchesSlowPath(t *testing.T) {
	alias := []byte(`"my-alias"`)
	fast := 0
	for _, in := range chunkEditCases {
		for _, drop := range []bool{false, true} {
			fast += checkChunkEdit(t, []byte(in), alias, drop)
		}
	}
	if fast < 10 {
		t.Fatalf("editChunk answered only %d of the cases; the fast path is not used", fast)
	}
}

func checkChunkEdit(t *testing.T, data, alias []byte, drop bool) int {
	t.Helper()
	got, ok := editChunk([]byte("data: "), data, alias, drop)
	if !ok {
		if !bytes.Equal(got, []byte("data: ")) {
			t.Fatalf("editChunk(%q) declined but changed dst to %q", data, got)
		}
		return 0
	}
	want := slowChunk(data, alias, drop)
	if want == nil || !bytes.Equal(got[len("data: "):], want) {
		t.Fatalf("editChunk(%q, drop=%v):\n got %q\nwant %q", data, drop, got[len("data: "):], want)
	}
	return 1
}
