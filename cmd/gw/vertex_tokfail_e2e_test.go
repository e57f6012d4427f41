package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/perf/mock"
)

// vertexTokFailFile: a group whose first target's token endpoint grants one
// short-lived token and then fails (fail_after=1), and a second target on
// a healthy key (another project, so the mock's log tells them apart).
const vertexTokFailFile = `_format_version: "1"
provider_keys:
  - display_name: vertex-flaky
    adapter: vertex
    api_key: ${E2E_VERTEX_SA_FLAKY}
    api_base: ${E2E_VERTEX_BASE}
  - display_name: vertex-good
    adapter: vertex
    api_key: ${E2E_VERTEX_SA}
    api_base: ${E2E_VERTEX_BASE}
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - {display_name: gem-flaky, provider: google, model_name: gemini-2.5-flash, provider_key: vertex-flaky}
  - {display_name: gem-good, provider: google, model_name: gemini-2.5-flash, provider_key: vertex-good}
  - display_name: gem-group
    routing:
      targets: [{model: gem-flaky, priority: 1}, {model: gem-good}]
`

// TestVertexTokenFailureFailsOver: the first target's token expires and its
// token endpoint then fails; every request, buffered and streamed, is
// answered by the other target instead of failing.
func TestVertexTokenFailureFailsOver(t *testing.T) {
	m := startMock(t, "E2E_VERTEX_BASE", mock.Config{RecordLimit: 512})
	base := os.Getenv("E2E_VERTEX_BASE")
	var doc map[string]any
	if err := json.Unmarshal(mock.VertexServiceAccount(base+"/vertex/token?ttl=2s&fail_after=1"), &doc); err != nil {
		t.Fatal(err)
	}
	doc["project"] = "flaky-proj"
	flaky, _ := json.Marshal(doc)
	t.Setenv("E2E_VERTEX_SA_FLAKY", string(flaky))
	t.Setenv("E2E_VERTEX_SA", string(mock.VertexServiceAccount(base+"/vertex/token")))
	g := startGW(t, writeTemp(t, "vertex-tokfail.yaml", vertexTokFailFile))
	client := openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))
	ctx := context.Background()

	// The first request gets the flaky key's one token.
	if _, err := client.Chat.Completions.New(ctx, chatParams("gem-group")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(4 * time.Second) // past the token's 2s life
	n := 0
	for time.Now().Before(deadline) {
		var err error
		if n%2 == 0 {
			_, err = client.Chat.Completions.New(ctx, chatParams("gem-group"))
		} else {
			_, _, err = streamChat(t, client, chatParams("gem-group"))
		}
		if err != nil {
			t.Fatalf("request %d failed: %v", n, err)
		}
		n++
		time.Sleep(100 * time.Millisecond)
	}
	// The flaky key served the start, the good one the rest.
	var flakyFirst, goodLater bool
	for i, r := range m.Requests() {
		flakyFirst = flakyFirst || i < 3 && strings.Contains(r.Path, "/projects/flaky-proj/")
		goodLater = goodLater || strings.Contains(r.Path, "/projects/") && !strings.Contains(r.Path, "/projects/flaky-proj/")
	}
	if !flakyFirst || !goodLater {
		t.Fatalf("flaky first %v, good later %v", flakyFirst, goodLater)
	}
	// A direct call to the flaky model has no other target: gw's own 502.
	_, err := client.Chat.Completions.New(ctx, chatParams("gem-flaky"))
	if err == nil || !strings.Contains(err.Error(), "upstream_credential_unavailable") || strings.Contains(err.Error(), "token endpoint down") {
		t.Fatalf("direct flaky call: %v", err)
	}
}
