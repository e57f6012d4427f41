package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/perf/mock"
)

// bedrockEndpointsFile: embeddings (Titan, Cohere) and rerank (Cohere,
// Amazon) models on Bedrock keys; the mock checks every signature and
// every InvokeModel body as strictly as Bedrock does.
const bedrockEndpointsFile = `_format_version: "1"
provider_keys:
  - {display_name: br, adapter: bedrock, api_key: "${E2E_BEDROCK_CREDS}", api_base: "${E2E_MOCK_BASE}"}
  - {display_name: br-throttled, adapter: bedrock, api_key: "${E2E_BEDROCK_CREDS}", api_base: "${E2E_MOCK_BASE}/knobs/status=429"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: titan, provider: bedrock, model_name: "amazon.titan-embed-text-v2:0", provider_key: br, embedding: {dimensions: 256}}
  - {display_name: titan-throttled, provider: bedrock, model_name: "amazon.titan-embed-text-v2:0", provider_key: br-throttled, embedding: {dimensions: 256}}
  - {display_name: cohere-embed, provider: bedrock, model_name: cohere.embed-english-v3, provider_key: br, embedding: {dimensions: 1024}}
  - {display_name: nova, provider: bedrock, model_name: "amazon.nova-micro-v1:0", provider_key: br}
  - {display_name: cohere-rerank, provider: bedrock, model_name: "cohere.rerank-v3-5:0", provider_key: br}
  - {display_name: amazon-rerank, provider: bedrock, model_name: "amazon.rerank-v1:0", provider_key: br}
  - display_name: titan-group
    routing:
      retry_on_429: true
      targets: [{model: titan-throttled, priority: 1}, {model: titan}]
`

// TestBedrockEmbeddingsAndRerankE2E: /v1/embeddings through openai-go on
// Titan (one text, dimensions) and Cohere embed (several texts, base64),
// failover within a group on a throttled target, 400 for what Titan cannot
// take; /v1/rerank on Cohere and Amazon rerank with documents returned.
func TestBedrockEmbeddingsAndRerankE2E(t *testing.T) {
	m := startMock(t, "E2E_MOCK_BASE", mock.Config{RecordLimit: 256})
	t.Setenv("E2E_BEDROCK_CREDS", `{"access_key_id":"`+mock.BedrockAccessKeyID+`","secret_access_key":"`+mock.BedrockSecretAccessKey+`","region":"us-west-2"}`)
	g := startGW(t, writeTemp(t, "bedrock-endpoints.yaml", bedrockEndpointsFile))
	base := "http://" + g.addr + "/v1"
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	ctx := context.Background()

	resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "titan", Dimensions: openai.Int(256),
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello bedrock")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "titan" || len(resp.Data) != 1 || resp.Usage.PromptTokens == 0 {
		t.Fatalf("titan answer: %+v", resp)
	}
	sameVector(t, resp.Data[0].Embedding, "hello bedrock", 256)
	last := lastRequest(m)
	if last.Path != "/model/amazon.titan-embed-text-v2%3A0/invoke" || last.Body != `{"inputText":"hello bedrock","dimensions":256}` ||
		!strings.HasPrefix(last.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+mock.BedrockAccessKeyID+"/") {
		t.Fatalf("upstream request: %s %s %v", last.Path, last.Body, last.Header)
	}

	resp, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "cohere-embed",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b", "c"}}})
	if err != nil || len(resp.Data) != 3 || resp.Usage.PromptTokens != 3 {
		t.Fatalf("cohere: %v %+v", err, resp)
	}
	for i, s := range []string{"a", "b", "c"} {
		sameVector(t, resp.Data[i].Embedding, s, 1024)
	}
	// base64: the float32 values gw encodes from Cohere's floats.
	raw := postRaw(t, base+"/embeddings", `{"model":"cohere-embed","input":["x"],"encoding_format":"base64","input_type":"search_query"}`)
	var b64 struct {
		Model string `json:"model"`
		Data  []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(raw), &b64); err != nil || b64.Model != "cohere-embed" || len(b64.Data) != 1 {
		t.Fatalf("base64 answer: %v %s", err, raw)
	}
	bs, _ := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
	want := mock.Embedding([]byte("x"), 1024)
	if len(bs) != 4*len(want) {
		t.Fatalf("base64 vector of %d bytes", len(bs))
	}
	for i, w := range want {
		if math.Float32frombits(binary.LittleEndian.Uint32(bs[4*i:])) != w {
			t.Fatalf("base64 vector differs at %d", i)
		}
	}
	if !strings.Contains(lastRequest(m).Body, `"input_type":"search_query"`) {
		t.Fatalf("input_type not relayed: %s", lastRequest(m).Body)
	}

	// Failover: the throttled target answers 429, the next one serves.
	n := len(m.Requests())
	resp, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "titan-group",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("failover")}})
	if err != nil || resp.Model != "titan-group" {
		t.Fatalf("group: %v %+v", err, resp)
	}
	sameVector(t, resp.Data[0].Embedding, "failover", 1024)
	if reqs := m.Requests()[n:]; len(reqs) != 2 || !strings.HasPrefix(reqs[0].Path, "/knobs/status=429/model/") {
		t.Fatalf("group attempts: %+v", reqs)
	}

	// What Titan cannot take: 400 before any upstream call.
	n = len(m.Requests())
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "titan",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}})
	apiErr(t, err, http.StatusBadRequest, "invalid_request")
	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "cohere-embed",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1, 2}}}})
	apiErr(t, err, http.StatusBadRequest, "invalid_request")
	if got := len(m.Requests()); got != n {
		t.Fatalf("%d upstream calls for refused requests", got-n)
	}

	// Rerank, Cohere shape both ways.
	type rerankAnswer struct {
		Model   string `json:"model"`
		Results []struct {
			Index    int     `json:"index"`
			Score    float64 `json:"relevance_score"`
			Document struct {
				Text string `json:"text"`
			} `json:"document"`
		} `json:"results"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	for _, model := range []string{"cohere-rerank", "amazon-rerank"} {
		out := postRaw(t, base+"/rerank", `{"model":"`+model+`","query":"capital of france","documents":["paris is the capital","bananas",{"text":"berlin"}],"top_n":2,"return_documents":true}`)
		var ra rerankAnswer
		if err := json.Unmarshal([]byte(out), &ra); err != nil || ra.Model != model || len(ra.Results) != 2 || ra.Usage.PromptTokens == 0 {
			t.Fatalf("%s: %v %s", model, err, out)
		}
		docs := []string{"paris is the capital", "bananas", "berlin"}
		for _, r := range ra.Results {
			if r.Document.Text != docs[r.Index] || r.Score <= 0 {
				t.Fatalf("%s: result %+v", model, r)
			}
		}
		if ra.Results[0].Score < ra.Results[1].Score {
			t.Fatalf("%s: not sorted: %s", model, out)
		}
		body := lastRequest(m).Body
		if model == "cohere-rerank" && !strings.Contains(body, `"api_version":2`) || strings.Contains(body, "return_documents") {
			t.Fatalf("%s upstream body: %s", model, body)
		}
	}
	// A chat model has no rerank body on Bedrock: 400 with the reason.
	if out := postRaw(t, base+"/rerank", `{"model":"nova","query":"q","documents":["d"]}`); !strings.Contains(out, "no rerank body") {
		t.Fatalf("rerank on nova: %s", out)
	}
}
