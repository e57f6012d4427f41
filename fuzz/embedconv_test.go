package fuzz

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/bedrock"
	"gw/adapters/embedconv"
	"gw/sse/rawjson"
)

// FuzzEmbedconvRequest: any embeddings or rerank body parses without
// panicking, and what parses from a valid body has the shapes the builders
// rely on (testdata/fuzz holds the crashers found, kept as regressions).
func FuzzEmbedconvRequest(f *testing.F) {
	for _, s := range []string{`{"input":"a"}`, `{"input":["a","b"],"dimensions":8,"encoding_format":"base64","input_type":"x"}`,
		`{"input":[[1,2]]}`, `{"input":[1,"a"]}`, `{"query":"q","documents":["a",{"text":"b"}],"top_n":1,"return_documents":true}`, `[`, `{"input":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// The edge hands over only bodies rawjson.Valid accepts; others
		// must merely not panic.
		if r, err := embedconv.ParseRequest(body, nil); err == nil && rawjson.Valid(body) {
			for _, tx := range r.Texts {
				if !json.Valid(tx) {
					t.Fatalf("text %q is not a JSON string", tx)
				}
			}
		}
		_, _ = embedconv.ParseRerank(body)
	})
}

// FuzzEmbedconvAnswer: any upstream answer converts or fails cleanly, and
// what converts is JSON (Bedrock's converter: Titan, Cohere, rerank).
func FuzzEmbedconvAnswer(f *testing.F) {
	for _, s := range []string{`{"embedding":[0.1,2],"inputTextTokenCount":3}`, `{"embeddings":{"float":[[1],[2]]}}`, `{"embeddings":[[1e3,-2]]}`,
		`{"id":"r","results":[{"index":1,"relevance_score":0.5},{"index":0,"relevance_score":0.1}]}`, `{"embedding":{}}`, `{`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	a, err := bedrock.NewWith(&adapters.KeyConfig{Name: "f", Credential: adapters.NewSecret(`{"access_key_id":"a","secret_access_key":"b","region":"us-east-1"}`)}, bedrock.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, b64 bool) {
		req := `{"input":["a","b"],"query":"q","documents":["x",{"text":"y"},"z"],"return_documents":true}`
		if b64 {
			req = `{"input":"a","encoding_format":"base64","query":"q","documents":["x","y"]}`
		}
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseResponse(resp)
		resp.SetBody(body)
		for _, e := range []adapters.Endpoint{adapters.EndpointEmbeddings, adapters.EndpointRerank} {
			out, err := a.AnswerEndpoint(nil, e, []byte(req), resp)
			if err == nil && !json.Valid(out) {
				t.Fatalf("%v: invalid JSON %s from %s", e, out, body)
			}
		}
	})
}
