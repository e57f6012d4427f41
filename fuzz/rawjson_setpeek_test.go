package fuzz

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"gw/adapters/openai"
	"gw/sse/rawjson"
)

// FuzzRawJSONSetPeek: SetPeek writes exactly what Set writes and peeks
// exactly what Get reads, on any bytes; RewriteModelUsage equals
// RewriteModel plus ExtractUsage.
func FuzzRawJSONSetPeek(f *testing.F) {
	f.Add([]byte(`{"id":"x","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`), "model", "usage")
	f.Add([]byte(`{"usage":1,"usage":{"total_tokens":7},"m\u006fdel":"a"}`), "model", "usage")
	f.Add([]byte(`{"a":[1,{"usage":2}]}`), "b", "a")
	f.Fuzz(func(t *testing.T, data []byte, key, peek string) {
		val := []byte(`"alias"`)
		want, werr := rawjson.Set(nil, data, key, val)
		got, peeked, err := rawjson.SetPeek(nil, data, key, val, peek)
		if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("SetPeek(%q, %q) = %q, %v; Set = %q, %v", data, key, got, err, want, werr)
		}
		if err != nil {
			return
		}
		if peek != "" {
			g, _, ok := rawjson.Get(data, peek)
			if ok != (peeked != nil) || !bytes.Equal(g, peeked) {
				t.Fatalf("SetPeek(%q) peeked %s = %q; Get = %q, %v", data, peek, peeked, g, ok)
			}
		}
		out, u, ok := openai.RewriteModelUsage(nil, data, val)
		wu, wok := openai.ExtractUsage(data)
		if !bytes.Equal(out, openai.RewriteModel(nil, data, val)) || ok != wok || u != wu {
			t.Fatalf("RewriteModelUsage(%q) = %q, %+v, %v; want RewriteModel + ExtractUsage %+v, %v", data, out, u, ok, wu, wok)
		}
	})
}

// FuzzOpenAIBufferedAnswer: on buffered chat answers (and any mutation of
// them) RewriteModelUsage's one-walk fast path equals RewriteModel plus
// ExtractUsage.
func FuzzOpenAIBufferedAnswer(f *testing.F) {
	for _, s := range []string{
		`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello \"there\"\n"},"finish_reason":"stop"}],"usage":{"prompt_tokens":15,"completion_tokens":5,"total_tokens":20,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":2,"audio_tokens":0}},"system_fingerprint":"fp"}`,
		`{"model":"a","usage":{"prompt_tokens":1.0,"total_tokens":"2"},"usage":{"completion_tokens":3,"completion_tokens_details":[1],"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":4}}}`,
		`{"m\u006fdel":"a","usage":{"pr\u006fmpt_tokens":9},"usage":null}`,
		`{"model":"a","model":"b","usage":{"total_tokens":1}}`,
		`{"usage":{"total_tokens":1]}`,
		`{"model":"a","usage":{"prompt_tokens_details":{"cached_tokens":1]}}`,
		` {"model" : "a" , "usage" : { "total_tokens" : 7 } } `,
	} {
		f.Add([]byte(s))
	}
	alias := []byte(`"alias"`)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, u, ok := openai.RewriteModelUsage(nil, data, alias)
		wu, wok := openai.ExtractUsage(data)
		if want := openai.RewriteModel(nil, data, alias); !bytes.Equal(out, want) || ok != wok || u != wu {
			t.Fatalf("RewriteModelUsage(%q) = %q, %+v, %v; want %q, %+v, %v", data, out, u, ok, want, wu, wok)
		}
		// Both share the usage walk: on valid JSON, check it against
		// encoding/json (plain non-negative integer counts only).
		// Names match as encoding/json fills a struct: without case, the
		// last of them winning.
		var top struct {
			Usage json.RawMessage `json:"usage"`
		}
		if !json.Valid(data) || json.Unmarshal(data, &top) != nil {
			return
		}
		var usage struct {
			Prompt            json.RawMessage `json:"prompt_tokens"`
			Completion        json.RawMessage `json:"completion_tokens"`
			Total             json.RawMessage `json:"total_tokens"`
			PromptDetails     json.RawMessage `json:"prompt_tokens_details"`
			CompletionDetails json.RawMessage `json:"completion_tokens_details"`
		}
		if !isObject(top.Usage) || json.Unmarshal(top.Usage, &usage) != nil {
			if ok {
				t.Fatalf("usage read from %q, which has no usage object", data)
			}
			return
		}
		if !ok {
			t.Fatalf("no usage read from %q", data)
		}
		count := func(k string, rawMsg json.RawMessage, got int64) {
			raw := string(rawMsg)
			if raw == "" || strings.Trim(raw, "0123456789") != "" || len(raw) > 15 {
				return
			}
			if want, _ := strconv.ParseInt(raw, 10, 64); got != want {
				t.Fatalf("%s = %d in %q; encoding/json reads %s", k, got, data, raw)
			}
		}
		count("prompt_tokens", usage.Prompt, u.Prompt)
		count("completion_tokens", usage.Completion, u.Completion)
		count("total_tokens", usage.Total, u.Total)
		var pd struct {
			Cached json.RawMessage `json:"cached_tokens"`
		}
		if isObject(usage.PromptDetails) && json.Unmarshal(usage.PromptDetails, &pd) == nil {
			count("cached_tokens", pd.Cached, u.Cached)
		}
		var cd struct {
			Reasoning json.RawMessage `json:"reasoning_tokens"`
		}
		if isObject(usage.CompletionDetails) && json.Unmarshal(usage.CompletionDetails, &cd) == nil {
			count("reasoning_tokens", cd.Reasoning, u.Reasoning)
		}
	})
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}
