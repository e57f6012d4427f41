package vertex

import (
	"errors"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
)

func TestEmbeddings(t *testing.T) {
	g := newTest(t, "google", "")
	if c := adapters.CapsOf(g); !c.Has(adapters.EndpointEmbeddings) || c.Has(adapters.EndpointRerank) {
		t.Fatalf("gemini caps %b", c)
	}
	for _, p := range []string{"anthropic", "meta"} {
		if c := adapters.CapsOf(newTest(t, p, "")); c.Has(adapters.EndpointEmbeddings) {
			t.Fatalf("%s caps %b", p, c)
		}
	}
	req := fasthttp.AcquireRequest()
	in := &adapters.ChatInput{Body: []byte(`{"model":"e","input":["a","b"],"dimensions":64,"task_type":"RETRIEVAL_QUERY"}`), UpstreamModel: "text-embedding-005"}
	if err := g.BuildEmbeddings(req, in); err != nil {
		t.Fatal(err)
	}
	if got := req.URI().String(); got != "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/europe-west4/publishers/google/models/text-embedding-005:predict" {
		t.Fatal(got)
	}
	if string(req.Body()) != `{"instances":[{"content":"a","task_type":"RETRIEVAL_QUERY"},{"content":"b","task_type":"RETRIEVAL_QUERY"}],"parameters":{"outputDimensionality":64}}` ||
		string(req.Header.Peek("Authorization")) != "Bearer token-1" {
		t.Fatalf("%s %s", req.Body(), req.Header.Header())
	}
	if err := g.BuildEmbeddings(req, &adapters.ChatInput{Body: []byte(`{"input":[[1,2]]}`), UpstreamModel: "m"}); !errors.As(err, new(adapters.RequestError)) {
		t.Fatal(err)
	}

	resp := fasthttp.AcquireResponse()
	resp.SetBodyString(`{"predictions":[{"embeddings":{"statistics":{"truncated":false,"token_count":2},"values":[0.5,1]}},{"embeddings":{"statistics":{"token_count":3.0},"values":[2,3]}}],"metadata":{"billableCharacterCount":2}}`)
	out, err := g.AnswerEndpoint(nil, adapters.EndpointEmbeddings, in.Body, resp)
	if err != nil || string(out) != `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,1]},{"object":"embedding","index":1,"embedding":[2,3]}],"model":"","usage":{"prompt_tokens":5,"total_tokens":5}}` {
		t.Fatal(string(out), err)
	}
	resp.SetBodyString(`{"predictions":[{"embeddings":{}}]}`)
	if _, err := g.AnswerEndpoint(nil, adapters.EndpointEmbeddings, in.Body, resp); err == nil {
		t.Fatal("no values accepted")
	}
}
