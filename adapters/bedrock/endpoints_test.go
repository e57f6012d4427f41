package bedrock

import (
	"errors"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
)

func TestBuildEmbeddingsAndRerank(t *testing.T) {
	a := newAdapter(t, "", headers.Config{})
	if c := adapters.CapsOf(a); !c.Has(adapters.EndpointEmbeddings) || !c.Has(adapters.EndpointRerank) || c.Has(adapters.EndpointCompletions) {
		t.Fatalf("caps %b", c)
	}
	for _, tc := range []struct {
		model, caller, path, body string
		rerank                    bool
	}{
		{"amazon.titan-embed-text-v2:0", `{"model":"e","input":"hello","dimensions":256}`, "/model/amazon.titan-embed-text-v2%3A0/invoke", `{"inputText":"hello","dimensions":256}`, false},
		{"amazon.titan-embed-text-v1", `{"model":"e","input":["hello"]}`, "/model/amazon.titan-embed-text-v1/invoke", `{"inputText":"hello"}`, false},
		{"amazon.titan-embed-image-v1", `{"model":"e","input":"x","dimensions":384}`, "/model/amazon.titan-embed-image-v1/invoke", `{"inputText":"x","embeddingConfig":{"outputEmbeddingLength":384}}`, false},
		{"cohere.embed-english-v3", `{"model":"e","input":["a","b"]}`, "/model/cohere.embed-english-v3/invoke", `{"texts":["a","b"],"input_type":"search_document","embedding_types":["float"]}`, false},
		{"cohere.embed-v4:0", `{"model":"e","input":"a","input_type":"search_query","dimensions":512}`, "/model/cohere.embed-v4%3A0/invoke", `{"texts":["a"],"input_type":"search_query","output_dimension":512,"embedding_types":["float"]}`, false},
		{"cohere.rerank-v3-5:0", `{"model":"r","query":"q","documents":["a","b"],"top_n":1,"return_documents":true}`, "/model/cohere.rerank-v3-5%3A0/invoke", `{"query":"q","documents":["a","b"],"top_n":1,"api_version":2}`, true},
		{"amazon.rerank-v1:0", `{"model":"r","query":"q","documents":["a"]}`, "/model/amazon.rerank-v1%3A0/invoke", `{"query":"q","documents":["a"]}`, true},
	} {
		req := fasthttp.AcquireRequest()
		in := &adapters.ChatInput{Body: []byte(tc.caller), UpstreamModel: tc.model}
		var err error
		if tc.rerank {
			err = a.BuildRerank(req, in)
		} else {
			err = a.BuildEmbeddings(req, in)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if string(req.RequestURI()) != tc.path || string(req.Body()) != tc.body || string(req.Header.Peek("Accept")) != "application/json" {
			t.Fatalf("%s: %s %s", tc.model, req.RequestURI(), req.Body())
		}
		checkSignature(t, req)
		fasthttp.ReleaseRequest(req)
	}
	for _, tc := range []struct{ model, caller string }{
		{"amazon.titan-embed-text-v2:0", `{"input":["a","b"]}`},
		{"amazon.titan-embed-text-v1", `{"input":"a","dimensions":3}`},
		{"cohere.embed-english-v3", `{"input":[[1,2]]}`},
		{"meta.llama3-8b-instruct-v1:0", `{"input":"a"}`},
	} {
		err := a.BuildEmbeddings(fasthttp.AcquireRequest(), &adapters.ChatInput{Body: []byte(tc.caller), UpstreamModel: tc.model})
		if !errors.As(err, new(adapters.RequestError)) {
			t.Fatalf("%s %s: %v", tc.model, tc.caller, err)
		}
	}
	if err := a.BuildRerank(fasthttp.AcquireRequest(), &adapters.ChatInput{Body: []byte(`{"query":"q","documents":["a"]}`), UpstreamModel: "amazon.nova-micro-v1:0"}); !errors.As(err, new(adapters.RequestError)) {
		t.Fatal(err)
	}
}

func TestAnswerEndpoint(t *testing.T) {
	a := newAdapter(t, "", headers.Config{})
	answer := func(e adapters.Endpoint, caller, body, tokens string) (string, error) {
		resp := fasthttp.AcquireResponse()
		resp.SetBodyString(body)
		if tokens != "" {
			resp.Header.Set("X-Amzn-Bedrock-Input-Token-Count", tokens)
		}
		out, err := a.AnswerEndpoint(nil, e, []byte(caller), resp)
		return string(out), err
	}
	got, err := answer(adapters.EndpointEmbeddings, `{"input":"a"}`, `{"embedding":[0.1,0.2],"inputTextTokenCount":3}`, "")
	if err != nil || got != `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"","usage":{"prompt_tokens":3,"total_tokens":3}}` {
		t.Fatal(got, err)
	}
	got, err = answer(adapters.EndpointEmbeddings, `{"input":["a","b"]}`, `{"id":"x","embeddings":{"float":[[1],[2]]},"texts":["a","b"]}`, "4")
	if err != nil || got != `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]},{"object":"embedding","index":1,"embedding":[2]}],"model":"","usage":{"prompt_tokens":4,"total_tokens":4}}` {
		t.Fatal(got, err)
	}
	got, err = answer(adapters.EndpointEmbeddings, `{"input":["a"],"encoding_format":"base64"}`, `{"embeddings":[[1]]}`, "")
	if err != nil || !strings.Contains(got, `"embedding":"AACAPw=="`) || strings.Contains(got, "usage") {
		t.Fatal(got, err)
	}
	got, err = answer(adapters.EndpointRerank, `{"query":"q","documents":["a","b"],"return_documents":true}`, `{"id":"r1","results":[{"index":1,"relevance_score":0.7}]}`, "9")
	if err != nil || got != `{"id":"r1","results":[{"index":1,"relevance_score":0.7,"document":{"text":"b"}}],"model":"","usage":{"prompt_tokens":9,"total_tokens":9}}` {
		t.Fatal(got, err)
	}
	for _, bad := range []string{`{}`, `{"embedding":{}}`, `not json`} {
		if _, err := answer(adapters.EndpointEmbeddings, `{"input":"a"}`, bad, ""); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
}
