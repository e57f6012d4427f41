package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/perf/mock"
)

const vertexEndpointsFile = `_format_version: "1"
provider_keys:
  - {display_name: vx, adapter: vertex, api_key: "${E2E_VERTEX_SA}", api_base: "${E2E_VERTEX_BASE}"}
  - {display_name: vx-claude, adapter: vertex, provider: anthropic, api_key: "${E2E_VERTEX_SA}", api_base: "${E2E_VERTEX_BASE}"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: vemb, provider: google, model_name: text-embedding-005, provider_key: vx, embedding: {dimensions: 768}}
  - {display_name: vemb-claude, provider: anthropic, model_name: claude-sonnet-4-5@20250929, provider_key: vx-claude, embedding: {dimensions: 8}}
`

// TestVertexEmbeddingsE2E: /v1/embeddings on a Gemini key goes to the
// model's :predict with the OAuth token; the predictions come back as an
// OpenAI list (float and base64, dimensions, task_type relayed) with usage;
// a Claude-on-Vertex key has no embeddings (501).
func TestVertexEmbeddingsE2E(t *testing.T) {
	m := startMock(t, "E2E_VERTEX_BASE", mock.Config{RecordLimit: 64})
	t.Setenv("E2E_VERTEX_SA", string(mock.VertexServiceAccount(os.Getenv("E2E_VERTEX_BASE")+"/vertex/token")))
	g := startGW(t, writeTemp(t, "vertex-endpoints.yaml", vertexEndpointsFile))
	base := "http://" + g.addr + "/v1"
	client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	ctx := context.Background()

	resp, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "vemb", Dimensions: openai.Int(32),
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"first text", "second"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "vemb" || len(resp.Data) != 2 || resp.Usage.PromptTokens != 3 || resp.Usage.TotalTokens != 3 {
		t.Fatalf("answer: %+v", resp)
	}
	sameVector(t, resp.Data[0].Embedding, "first text", 32)
	sameVector(t, resp.Data[1].Embedding, "second", 32)
	last := lastRequest(m)
	if !strings.HasSuffix(last.Path, "/publishers/google/models/text-embedding-005:predict") || !strings.HasPrefix(last.Header.Get("Authorization"), "Bearer ya29.mock-") ||
		last.Body != `{"instances":[{"content":"first text"},{"content":"second"}],"parameters":{"outputDimensionality":32}}` {
		t.Fatalf("upstream request: %s %s", last.Path, last.Body)
	}

	raw := postRaw(t, base+"/embeddings", `{"model":"vemb","input":"q","encoding_format":"base64","task_type":"RETRIEVAL_QUERY"}`)
	var b64 struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(raw), &b64); err != nil || len(b64.Data) != 1 {
		t.Fatalf("base64: %v %s", err, raw)
	}
	if bs, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding); err != nil || len(bs) != 768*4 {
		t.Fatalf("base64 vector: %v %d bytes", err, len(bs))
	}
	if !strings.Contains(lastRequest(m).Body, `"task_type":"RETRIEVAL_QUERY"`) {
		t.Fatalf("task_type: %s", lastRequest(m).Body)
	}

	_, err = client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "vemb-claude",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	apiErr(t, err, http.StatusNotImplemented, "not_implemented")
}
