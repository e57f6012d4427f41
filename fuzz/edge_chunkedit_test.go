package fuzz

import (
	"bytes"
	"testing"

	"gw/adapters/openai"
	"gw/edge"
	"gw/sse/rawjson"
)

// FuzzEdgeEditChunk: the relay's one-pass chunk edit (model set to the
// alias, forced usage:null removed) never disagrees with the three-pass
// edit it replaced; where it declines, dst is untouched.
func FuzzEdgeEditChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":null}`,
		`{ "id" : "c" ,	"model" :"gpt-4o" , "usage" : null , "choices" : [ ] }`,
		`{"usage":null,"model":"gpt-4o","choices":[]}`,
		`{"id":"c","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1}}`,
		`{"id":"c","model":"a","model":"b"}`,
		`{"id":"c","m\u006fdel":"gpt-4o","usage":null}`,
		`{"id":"say \"model\": x","model":"gpt-4o","choices":[{"delta":{"content":"\"usage\":null"}}],"usage":null}`,
		`[1,2]`, `{"id":"c","model":`, ``,
	} {
		f.Add([]byte(s), true)
	}
	alias := []byte(`"a"`)
	prefix := []byte("data: ")
	f.Fuzz(func(t *testing.T, data []byte, drop bool) {
		got, ok := edge.EditChunk(append([]byte(nil), prefix...), data, alias, drop)
		if !ok {
			if !bytes.Equal(got, prefix) {
				t.Fatalf("EditChunk(%q) declined but changed dst to %q", data, got)
			}
			return
		}
		if openai.IsUsageOnlyChunk(data) {
			t.Fatalf("EditChunk(%q) answered a usage-only chunk (the slow path consumes it)", data)
		}
		want := data
		if drop {
			if d, err := rawjson.Delete(nil, data, "usage"); err == nil {
				want = d
			}
		}
		want = openai.RewriteModel(nil, want, alias)
		if !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("EditChunk(%q, drop=%v):\n got %q\nwant %q", data, drop, got[len(prefix):], want)
		}
	})
}
