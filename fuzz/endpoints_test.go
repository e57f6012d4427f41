package fuzz

import (
	"bytes"
	"encoding/json"
	"testing"

	"gw/edge"
	"gw/edge/guard"
	"gw/perf/mock"
)

// FuzzEdgeEndpointRequest: the read stage of /v1/embeddings,
// /v1/completions and /v1/rerank never panics, accepts only JSON objects
// encoding/json accepts, and reads the model and stream flag as
// encoding/json does.
func FuzzEdgeEndpointRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"e","input":"hi"}`, `{"model":"e","input":["a","b"],"encoding_format":"base64","dimensions":8}`,
		`{"model":"e","input":[[1,2],[3]]}`, `{"model":"e","input":[1,"a"]}`, `{"model":"c","prompt":"p","stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"r","query":"q","documents":["a",{"text":"b"}],"top_n":1,"return_documents":true}`,
		`{"model":"a\u0062","input":"x"}`, `{"model":"a","model":"b","input":"x"}`, `[]`, `{`, `{"model":null}`,
		`{"Model":"e","INPUT":"x","Stream":true}`, `{"model":"e","Model":"f","input":"x"}`,
	} {
		for _, p := range []byte{0, 1, 2, 3, 4, 5} {
			f.Add(p, []byte(s))
		}
	}
	paths := []string{"/v1/embeddings", "/v1/completions", "/v1/rerank", "/v1/images/generations", "/v1/audio/speech", "/v1/videos"}
	f.Fuzz(func(t *testing.T, p byte, body []byte) {
		info, err := edge.ParseEndpointRequest(paths[int(p)%len(paths)], body)
		if err != nil {
			return
		}
		// Names match as encoding/json fills a struct (without case); a
		// body with two spellings of one name was refused above.
		var members struct {
			Model  json.RawMessage `json:"model"`
			Stream json.RawMessage `json:"stream"`
		}
		if json.Unmarshal(body, &members) != nil {
			t.Fatalf("accepted a body encoding/json rejects: %q", body)
		}
		var model string
		if json.Unmarshal(members.Model, &model) != nil || model != info.Model {
			t.Fatalf("model %q; encoding/json reads %s", info.Model, members.Model)
		}
		var stream bool
		if s := members.Stream; s != nil && string(s) != "null" && json.Unmarshal(s, &stream) != nil {
			t.Fatalf("accepted stream %s", s)
		}
		if stream != info.Stream {
			t.Fatalf("stream %v; encoding/json reads %v", info.Stream, stream)
		}
	})
}

// FuzzGuardEndpointExtract: the extractor of the endpoint formats never
// panics, and rewriting without a mask gives the body back unchanged.
func FuzzGuardEndpointExtract(f *testing.F) {
	for _, s := range []string{
		`{"input":["a","b\u00e9"]}`, `{"input":"x"}`, `{"input":[1,2]}`, `{"prompt":["p"]}`,
		`{"query":"q","documents":["d",{"text":"t","k":"v"},3]}`, `{"choices":[{"text":"o"}]}`, `{}`, `[]`,
	} {
		for _, fm := range []byte{0, 1, 2, 3, 4, 5, 6, 7} {
			f.Add(fm, []byte(s))
		}
	}
	formats := []guard.Format{guard.EmbeddingsRequest, guard.CompletionsRequest, guard.RerankRequest, guard.CompletionsAnswer, guard.TextlessAnswer, guard.ImagesRequest, guard.ImagesAnswer, guard.SpeechRequest}
	f.Fuzz(func(t *testing.T, fm byte, body []byte) {
		if !json.Valid(body) {
			return // the read stage validated every body the extractor sees
		}
		var e guard.Exec
		var x guard.Extractor
		_ = x.Extract(&e, formats[int(fm)%len(formats)], body)
		if out := x.Rewrite(nil, &e); !bytes.Equal(out, body) {
			t.Fatalf("rewrite without masks changed %q into %q", body, out)
		}
	})
}

// FuzzMockEmbedding: the mock's vectors are deterministic and of unit
// length for any input.
func FuzzMockEmbedding(f *testing.F) {
	f.Add([]byte("hello"), uint16(8))
	f.Add([]byte(""), uint16(1))
	f.Fuzz(func(t *testing.T, in []byte, d uint16) {
		dims := int(d%512) + 1
		a, b := mock.Embedding(in, dims), mock.Embedding(in, dims)
		var sum float64
		for i := range a {
			if a[i] != b[i] {
				t.Fatal("not deterministic")
			}
			sum += float64(a[i]) * float64(a[i])
		}
		if sum < 0.999 || sum > 1.001 {
			t.Fatalf("norm² %v", sum)
		}
	})
}
