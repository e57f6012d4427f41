package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"

	"gw/adapters"
	"gw/sse"
	"gw/sse/rawjson"
)

// fixtureChunks returns the data of every non-[DONE] event of a recorded
// stream shared with package sse.
func fixtureChunks(t testing.TB, name string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile("../../sse/testdata/" + name)
	if err != nil {
		t.Fatalf("cannot read fixture: %v", err)
	}
	r := sse.AcquireReader(bytes.NewReader(raw))
	defer sse.ReleaseReader(r)
	var out [][]byte
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("fixture %s: %v", name, err)
		}
		if len(ev.Data) == 0 || sse.IsDone(ev.Data) {
			continue
		}
		out = append(out, append([]byte(nil), ev.Data...))
	}
}

func TestRewriteModel(t *testing.T) {
	alias := rawjson.AppendQuote(nil, "my-alias")
	f := func(in, want string) {
		t.Helper()
		got := RewriteModel([]byte("prefix:"), []byte(in), alias)
		if string(got) != "prefix:"+want {
			t.Fatalf("got %s; want prefix:%s", got, want)
		}
	}
	f(`{"id":"c1","model":"gpt-4o-2024-08-06","choices":[]}`, `{"id":"c1","model":"my-alias","choices":[]}`)
	f(`{"model":""}`, `{"model":"my-alias"}`)                                              // Azure's filter chunk
	f(`{"error":{"message":"x"}}`, `{"error":{"message":"x"},"model":"my-alias"}`)         // added when absent
	f(`not json`, `not json`)                                                              // unchanged
	f(`{"model":"a","x":{"model":"inner"}}`, `{"model":"my-alias","x":{"model":"inner"}}`) // top level only

	for _, name := range []string{"openai_chat_text.sse", "openai_chat_include_usage_finish_length.sse",
		"openai_chat_parallel_tool_calls_include_usage.sse", "azure_openai_chat_text_content_filter.sse"} {
		for _, c := range fixtureChunks(t, name) {
			out := RewriteModel(nil, c, alias)
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatalf("%s: invalid output %s", name, out)
			}
			if m["model"] != "my-alias" {
				t.Fatalf("%s: model %v", name, m["model"])
			}
		}
	}
}

func TestIsUsageOnlyChunk(t *testing.T) {
	f := func(in string, want bool) {
		t.Helper()
		if got := IsUsageOnlyChunk([]byte(in)); got != want {
			t.Fatalf("%s: got %v; want %v", in, got, want)
		}
	}
	f(`{"choices":[],"usage":{"prompt_tokens":1}}`, true)
	f(`{"choices":[ ],"usage":{}}`, true)
	f(`{"choices":null,"usage":{"total_tokens":3}}`, true) // compatible backends
	f(`{"usage":{"total_tokens":3}}`, true)                // choices omitted
	f(`{"choices":[],"usage":null}`, false)
	f(`{"choices":[],"prompt_filter_results":[]}`, false) // Azure filter chunk
	f(`{"choices":[{"index":0}],"usage":{"total_tokens":3}}`, false)
	f(`{"choices":[],"usage":{}`, false)
	f(`[]`, false)

	// Exactly one usage chunk per include_usage fixture, none in Azure's.
	for name, want := range map[string]int{
		"openai_chat_include_usage_finish_length.sse":       1,
		"openai_chat_parallel_tool_calls_include_usage.sse": 1,
		"azure_openai_chat_text_content_filter.sse":         0,
		"openai_chat_text.sse":                              0,
	} {
		n := 0
		for _, c := range fixtureChunks(t, name) {
			if IsUsageOnlyChunk(c) {
				n++
			}
		}
		if n != want {
			t.Errorf("%s: %d usage chunks; want %d", name, n, want)
		}
	}
}

func TestExtractUsage(t *testing.T) {
	f := func(in string, want adapters.Usage, wantOK bool) {
		t.Helper()
		got, ok := ExtractUsage([]byte(in))
		if got != want || ok != wantOK {
			t.Fatalf("%s: got %+v %v; want %+v %v", in, got, ok, want, wantOK)
		}
	}
	f(`{"usage":{"prompt_tokens":12,"completion_tokens":100,"total_tokens":112,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":64}}}`,
		adapters.Usage{Prompt: 12, Completion: 100, Total: 112, Cached: 4, Reasoning: 64}, true)
	f(`{"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`, adapters.Usage{Prompt: 9, Completion: 2, Total: 11}, true)
	f(`{"usage":{"prompt_tokens":9.0,"completion_tokens":"2","total_tokens":null}}`, adapters.Usage{Prompt: 9}, true)
	f(`{"usage":null}`, adapters.Usage{}, false)
	f(`{"choices":[]}`, adapters.Usage{}, false)
	f(`garbage`, adapters.Usage{}, false)

	var got adapters.Usage
	for _, c := range fixtureChunks(t, "openai_chat_include_usage_finish_length.sse") {
		if u, ok := ExtractUsage(c); ok {
			got = u
		}
	}
	if want := (adapters.Usage{Prompt: 12, Completion: 100, Total: 112, Reasoning: 100}); got != want {
		t.Fatalf("fixture usage %+v; want %+v", got, want)
	}
}
