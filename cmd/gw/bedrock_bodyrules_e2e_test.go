package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/perf/mock"
)

const bodyRulesFile = `_format_version: "1"
provider_keys:
  - display_name: br
    adapter: bedrock
    api_key: ${E2E_BEDROCK_CREDS}
    api_base: ${E2E_MOCK_BASE}
    request:
      param_constraints: {temperature_max: 0.5}
      default_body_fields: {performanceConfig: {latency: standard}}
  - display_name: vx
    adapter: vertex
    api_key: ${E2E_VERTEX_SA}
    api_base: ${E2E_MOCK_BASE}
    request:
      param_constraints: {temperature_max: 0.3}
      default_body_fields: {safetySettings: [{category: HARM_CATEGORY_HARASSMENT, threshold: BLOCK_ONLY_HIGH}]}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: nova, provider: bedrock, model_name: "us.amazon.nova-micro-v1:0", provider_key: br}
  - {display_name: gem, provider: google, model_name: gemini-2.5-flash, provider_key: vx}
`

// TestBedrockVertexBodyRulesE2E: a key's temperature_max and
// default_body_fields reach a Bedrock (Converse inferenceConfig, signed)
// and a Vertex Gemini upstream (generationConfig, safetySettings), which
// the mock accepts; neither key lists the rules as unenforced.
func TestBedrockVertexBodyRulesE2E(t *testing.T) {
	m := startMock(t, "E2E_MOCK_BASE", mock.Config{RecordLimit: 64})
	t.Setenv("E2E_BEDROCK_CREDS", `{"access_key_id":"`+mock.BedrockAccessKeyID+`","secret_access_key":"`+mock.BedrockSecretAccessKey+`","region":"us-east-1"}`)
	t.Setenv("E2E_VERTEX_SA", string(mock.VertexServiceAccount(os.Getenv("E2E_MOCK_BASE")+"/vertex/token")))
	g := startGW(t, writeTemp(t, "bodyrules.yaml", bodyRulesFile))
	client := openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	ctx := context.Background()
	for _, tc := range []struct{ model, want1, want2 string }{
		{"nova", `"inferenceConfig":{"temperature":0.5}`, `"performanceConfig":{"latency":"standard"}`},
		{"gem", `"generationConfig":{"temperature":0.3}`, `"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_ONLY_HIGH"}]`},
	} {
		p := chatParams(tc.model)
		p.Temperature = openai.Float(1.5)
		if _, err := client.Chat.Completions.New(ctx, p); err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		body := lastRequest(m).Body
		if !strings.Contains(body, tc.want1) || !strings.Contains(body, tc.want2) {
			t.Fatalf("%s upstream body: %s", tc.model, body)
		}
	}
	if strings.Contains(g.stderr.String(), "param_constraints") || strings.Contains(g.stderr.String(), "default_body_fields") {
		t.Fatalf("body rules reported unenforced:\n%s", g.stderr.String())
	}
}
