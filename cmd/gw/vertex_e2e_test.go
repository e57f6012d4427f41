package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"

	"gw/perf/mock"
)

// vertexFile: three Vertex keys sharing the test service account (a key
// generated for tests only, perf/mock/testdata), one per upstream protocol.
const vertexFile = `_format_version: "1"
provider_keys:
  - display_name: vertex-gemini
    adapter: vertex
    api_key: ${E2E_VERTEX_SA}
    api_base: ${E2E_VERTEX_BASE}
    request: {forward_client_headers: ["x-mock-*"]}
  - display_name: vertex-claude
    adapter: vertex
    provider: anthropic
    api_key: ${E2E_VERTEX_SA}
    api_base: ${E2E_VERTEX_BASE}
    request: {forward_client_headers: ["x-mock-*"]}
  - display_name: vertex-throttled
    adapter: vertex
    api_key: ${E2E_VERTEX_SA}
    api_base: ${E2E_VERTEX_BASE}/knobs/status=429,retry_after=1
  - display_name: vertex-llama
    adapter: vertex
    provider: meta
    api_key: ${E2E_VERTEX_SA}
    api_base: ${E2E_VERTEX_BASE}
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - display_name: gemini
    provider: google
    model_name: gemini-2.5-flash
    provider_key: vertex-gemini
  - display_name: gemini-text-fixture
    provider: google
    model_name: gemini-2.0-flash-exp
    provider_key: vertex-gemini
  - display_name: gemini-call-fixture
    provider: google
    model_name: gemini-3-pro-preview
    provider_key: vertex-gemini
  - display_name: claude-vertex
    provider: anthropic
    model_name: claude-sonnet-4-5@20250929
    provider_key: vertex-claude
  - display_name: gemini-throttled
    provider: google
    model_name: gemini-2.5-flash
    provider_key: vertex-throttled
  - display_name: gemini-group
    routing:
      retry_on_429: true
      targets: [{model: gemini-throttled, priority: 1}, {model: gemini}]
  - display_name: llama
    provider: meta
    model_name: meta/llama-3.3-70b-instruct-maas
    provider_key: vertex-llama
`

// examples/gw.yaml's vertex key reads VERTEX_SA, as `make run` exports it.
func init() {
	b, err := os.ReadFile("../../perf/mock/testdata/vertex_service_account.json")
	if err != nil {
		panic(err)
	}
	exampleEnv = append(exampleEnv, "VERTEX_SA="+string(b))
}

type vertexE2E struct {
	mock   *mock.Server
	client openai.Client
	base   string
}

// startVertexE2E starts the mock and gw; tokens from the mock live ttl.
func startVertexE2E(t *testing.T, ttl string) *vertexE2E {
	t.Helper()
	m := startMock(t, "E2E_VERTEX_BASE", mock.Config{RecordLimit: 256})
	base := os.Getenv("E2E_VERTEX_BASE")
	t.Setenv("E2E_VERTEX_SA", string(mock.VertexServiceAccount(base+"/vertex/token?ttl="+ttl)))
	g := startGW(t, writeTemp(t, "vertex.yaml", vertexFile))
	gwBase := "http://" + g.addr + "/v1"
	return &vertexE2E{mock: m, base: gwBase, client: openai.NewClient(option.WithBaseURL(gwBase), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))}
}

// lastVertex returns the last Vertex API request (token requests skipped).
func (e *vertexE2E) lastVertex(t *testing.T) mock.RecordedRequest {
	t.Helper()
	rs := e.mock.Requests()
	for i := len(rs) - 1; i >= 0; i-- {
		if strings.Contains(rs[i].Path, "/v1/projects/") {
			return rs[i]
		}
	}
	t.Fatal("no Vertex request recorded")
	return mock.RecordedRequest{}
}

func streamChat(t *testing.T, c openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) (openai.ChatCompletion, []openai.ChatCompletionChunk, error) {
	t.Helper()
	st := c.Chat.Completions.NewStreaming(context.Background(), p, opts...)
	acc := openai.ChatCompletionAccumulator{}
	var chunks []openai.ChatCompletionChunk
	for st.Next() {
		acc.AddChunk(st.Current())
		chunks = append(chunks, st.Current())
	}
	return acc.ChatCompletion, chunks, st.Err()
}

func TestVertexGemini(t *testing.T) {
	e := startVertexE2E(t, "1h")
	ctx := context.Background()

	t.Run("text buffered with system and developer", func(t *testing.T) {
		p := chatParams("gemini")
		p.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.DeveloperMessage("Answer in English.")}, p.Messages...)
		resp, err := e.client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Model != "gemini" || !strings.HasPrefix(resp.Choices[0].Message.Content, "Hello from the gw mock") || resp.Choices[0].FinishReason != "stop" {
			t.Fatalf("answer: %+v", resp)
		}
		if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens != 5 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+5 {
			t.Fatalf("usage: %+v", resp.Usage)
		}
		r := e.lastVertex(t)
		if !strings.HasSuffix(r.Path, "/v1/projects/gw-mock-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent") ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ya29.mock-") {
			t.Fatalf("upstream request %s auth %q", r.Path, r.Header.Get("Authorization"))
		}
		if !strings.Contains(r.Body, `"systemInstruction":{"parts":[{"text":"Be brief."},{"text":"Answer in English."}]}`) || strings.Contains(r.Body, `"model"`) {
			t.Fatalf("upstream body: %s", r.Body)
		}
	})

	t.Run("text streamed with usage", func(t *testing.T) {
		p := chatParams("gemini")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		acc, _, err := streamChat(t, e.client, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices[0].Message.Content) != 40 || acc.Usage.CompletionTokens != 5 {
			t.Fatalf("stream: %+v", acc)
		}
		if r := e.lastVertex(t); !strings.HasSuffix(r.Path, ":streamGenerateContent") || r.Query != "alt=sse" {
			t.Fatalf("upstream %s?%s", r.Path, r.Query)
		}
	})

	t.Run("recorded text fixture", func(t *testing.T) {
		acc, _, err := streamChat(t, e.client, chatParams("gemini-text-fixture"))
		if err != nil {
			t.Fatal(err)
		}
		if acc.Choices[0].Message.Content != "The capital of France is Paris.\n" || acc.Choices[0].FinishReason != "stop" {
			t.Fatalf("fixture: %+v", acc)
		}
	})

	t.Run("tool calls single and parallel, streamed and buffered", func(t *testing.T) {
		p := chatParams("gemini")
		p.Tools = []openai.ChatCompletionToolParam{
			{Function: openai.FunctionDefinitionParam{Name: "get_weather", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}},
			{Function: openai.FunctionDefinitionParam{Name: "get_time"}},
		}
		for _, n := range []string{"1", "2"} {
			acc, _, err := streamChat(t, e.client, p, option.WithHeader("x-mock-tool-calls", n))
			if err != nil {
				t.Fatal(err)
			}
			calls := acc.Choices[0].Message.ToolCalls
			if len(calls) != int(n[0]-'0') || calls[0].Function.Name != "get_weather" || !json.Valid([]byte(calls[0].Function.Arguments)) ||
				!strings.HasPrefix(calls[0].ID, "call_") || acc.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("%s streamed calls: %+v", n, acc.Choices[0])
			}
			if n == "2" && (calls[1].Function.Name != "get_time" || calls[1].ID == calls[0].ID) {
				t.Fatalf("parallel calls: %+v", calls)
			}
		}
		resp, err := e.client.Chat.Completions.New(ctx, p, option.WithHeader("x-mock-tool-calls", "2"))
		if err != nil {
			t.Fatal(err)
		}
		calls := resp.Choices[0].Message.ToolCalls
		if len(calls) != 2 || resp.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("buffered calls: %+v", resp.Choices[0])
		}
		if r := e.lastVertex(t); !strings.Contains(r.Body, `"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{`) {
			t.Fatalf("upstream tools: %s", r.Body)
		}

		// The conversation goes on: the calls and their results reach
		// Gemini as functionCall and functionResponse parts, named.
		p.Messages = append(p.Messages, resp.Choices[0].Message.ToParam(),
			openai.ToolMessage(`{"temp_c":4}`, calls[0].ID), openai.ToolMessage("noon", calls[1].ID))
		if _, err := e.client.Chat.Completions.New(ctx, p); err != nil {
			t.Fatal(err)
		}
		body := e.lastVertex(t).Body
		if !strings.Contains(body, `{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"query":`) ||
			!strings.Contains(body, `{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp_c":4}}},{"functionResponse":{"name":"get_time","response":{"content":"noon"}}}]}`) {
			t.Fatalf("follow-up body: %s", body)
		}
	})

	t.Run("recorded function call fixture keeps the thought signature", func(t *testing.T) {
		p := chatParams("gemini-call-fixture")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		p.Tools = []openai.ChatCompletionToolParam{{Function: openai.FunctionDefinitionParam{Name: "get_country"}}}
		acc, chunks, err := streamChat(t, e.client, p)
		if err != nil {
			t.Fatal(err)
		}
		calls := acc.Choices[0].Message.ToolCalls
		if len(calls) != 1 || calls[0].Function.Name != "get_country" || calls[0].Function.Arguments != "{}" || acc.Usage.CompletionTokens != 212 {
			t.Fatalf("fixture call: %+v usage %+v", acc.Choices[0], acc.Usage)
		}
		if last := chunks[len(chunks)-1].RawJSON(); !strings.Contains(last, `"reasoning_tokens":202`) {
			t.Fatalf("usage chunk: %s", last)
		}
		p.Model = "gemini"
		p.Messages = append(p.Messages, acc.Choices[0].Message.ToParam(), openai.ToolMessage("France", calls[0].ID))
		if _, err := e.client.Chat.Completions.New(ctx, p); err != nil {
			t.Fatal(err)
		}
		if body := e.lastVertex(t).Body; !strings.Contains(body, `"thoughtSignature":"EpwICpkIAXLI2nxl`) {
			t.Fatalf("signature not restored: %s", body)
		}
	})

	t.Run("reasoning", func(t *testing.T) {
		p := chatParams("gemini")
		p.ReasoningEffort = "low"
		resp, err := e.client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(resp.RawJSON(), `"reasoning_content":"Thinking it over (mock). Thinking it over (mock). "`) || resp.Usage.CompletionTokensDetails.ReasoningTokens != 2 {
			t.Fatalf("reasoning: %s", resp.RawJSON())
		}
		if body := e.lastVertex(t).Body; !strings.Contains(body, `"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}`) {
			t.Fatalf("upstream: %s", body)
		}
		_, chunks, err := streamChat(t, e.client, p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(chunks[1].RawJSON(), `"reasoning_content":"Thinking it over (mock). "`) {
			t.Fatalf("streamed reasoning: %s", chunks[1].RawJSON())
		}
	})

	t.Run("images in", func(t *testing.T) {
		p := chatParams("gemini")
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in these?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBORw0KGgo="}),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.webp"}),
		})}
		if _, err := e.client.Chat.Completions.New(ctx, p); err != nil {
			t.Fatal(err)
		}
		body := e.lastVertex(t).Body
		if !strings.Contains(body, `{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}`) ||
			!strings.Contains(body, `{"fileData":{"mimeType":"image/webp","fileUri":"https://example.com/cat.webp"}}`) {
			t.Fatalf("image parts: %s", body)
		}
	})

	t.Run("safety", func(t *testing.T) {
		for _, word := range []string{"mock:safety", "mock:block_prompt"} {
			p := chatParams("gemini")
			p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("please " + word)}
			resp, err := e.client.Chat.Completions.New(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Choices[0].FinishReason != "content_filter" {
				t.Fatalf("%s buffered: %+v", word, resp.Choices[0])
			}
			acc, _, err := streamChat(t, e.client, p)
			if err != nil {
				t.Fatal(err)
			}
			if acc.Choices[0].FinishReason != "content_filter" {
				t.Fatalf("%s streamed: %+v", word, acc.Choices)
			}
		}
	})

	t.Run("mid-stream error", func(t *testing.T) {
		_, chunks, err := streamChat(t, e.client, chatParams("gemini"), option.WithHeader("x-mock-stream-error-after", "2"))
		if err == nil || !strings.Contains(err.Error(), "overloaded") {
			t.Fatalf("mid-stream error: %v after %d chunks", err, len(chunks))
		}
	})

	t.Run("upstream status", func(t *testing.T) {
		_, err := e.client.Chat.Completions.New(ctx, chatParams("gemini"), option.WithHeader("x-mock-status", "429"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
			t.Fatalf("429: %v", err)
		}
	})

	t.Run("throttled target fails over", func(t *testing.T) {
		for _, stream := range []bool{false, true} {
			var content string
			if stream {
				acc, _, err := streamChat(t, e.client, chatParams("gemini-group"))
				if err != nil {
					t.Fatal(err)
				}
				content = acc.Choices[0].Message.Content
			} else {
				resp, err := e.client.Chat.Completions.New(ctx, chatParams("gemini-group"))
				if err != nil {
					t.Fatal(err)
				}
				content = resp.Choices[0].Message.Content
			}
			if len(content) != 40 {
				t.Fatalf("stream %v: %q", stream, content)
			}
			rs := e.mock.Requests()
			throttled := false
			for _, r := range rs[len(rs)-3:] {
				throttled = throttled || strings.HasPrefix(r.Path, "/knobs/status=429")
			}
			if !throttled || !strings.HasPrefix(e.lastVertex(t).Path, "/v1/projects/") {
				t.Fatalf("stream %v: no failover seen", stream)
			}
		}
	})

	t.Run("messages and responses callers", func(t *testing.T) {
		ac := anthropic.NewClient(aoption.WithBaseURL(strings.TrimSuffix(e.base, "/v1")), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
		ms := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
			Model: "gemini-text-fixture", MaxTokens: 256,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Capital of France?"))},
		})
		msg := anthropic.Message{}
		for ms.Next() {
			if err := msg.Accumulate(ms.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := ms.Err(); err != nil || len(msg.Content) == 0 || msg.Content[0].Text != "The capital of France is Paris.\n" || msg.Usage.OutputTokens != 8 {
			t.Fatalf("messages caller: %v %+v", err, msg)
		}
		rs := e.client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
			Model: "gemini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")},
		})
		completed := false
		var text strings.Builder
		for rs.Next() {
			ev := rs.Current()
			if ev.Type == "response.output_text.delta" {
				text.WriteString(ev.Delta.OfString)
			}
			completed = completed || ev.Type == "response.completed"
		}
		if err := rs.Err(); err != nil || !completed || text.Len() != 40 {
			t.Fatalf("responses caller: %v %v %q", err, completed, text.String())
		}
	})
}

func TestVertexClaudeAndPartners(t *testing.T) {
	e := startVertexE2E(t, "1h")
	ctx := context.Background()

	// Claude on Vertex, native Messages streaming.
	ac := anthropic.NewClient(aoption.WithBaseURL(strings.TrimSuffix(e.base, "/v1")), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	mp := anthropic.MessageNewParams{
		Model: "claude-vertex", MaxTokens: 1024,
		System:   []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
		Tools:    []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}},
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
	}
	ms := ac.Messages.NewStreaming(ctx, mp, aoption.WithHeader("x-mock-tool-calls", "1"))
	msg := anthropic.Message{}
	for ms.Next() {
		if err := msg.Accumulate(ms.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms.Err(); err != nil || string(msg.Model) != "claude-vertex" || msg.StopReason != "tool_use" {
		t.Fatalf("claude native stream: %v %+v", err, msg)
	}
	r := e.lastVertex(t)
	if !strings.HasSuffix(r.Path, "/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict") ||
		!strings.Contains(r.Body, `"anthropic_version":"vertex-2023-10-16"`) || strings.Contains(r.Body, `"model"`) ||
		!strings.Contains(r.Body, `"thinking":{"budget_tokens":1024,"type":"enabled"}`) {
		t.Fatalf("claude upstream %s: %s", r.Path, r.Body)
	}

	// count_tokens goes to count-tokens:rawPredict with the upstream model.
	ct, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
		Model: "claude-vertex", Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))},
	})
	if err != nil || ct.InputTokens == 0 {
		t.Fatalf("count_tokens: %v %+v", err, ct)
	}
	if r := e.lastVertex(t); !strings.HasSuffix(r.Path, "/count-tokens:rawPredict") || !strings.Contains(r.Body, `"model":"claude-sonnet-4-5@20250929"`) {
		t.Fatalf("count upstream %s: %s", r.Path, r.Body)
	}

	// A chat caller on Claude on Vertex: converted, developer merged into system.
	p := chatParams("claude-vertex")
	p.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.DeveloperMessage("Be brief.")}, p.Messages...)
	resp, err := e.client.Chat.Completions.New(ctx, p)
	if err != nil || resp.Choices[0].Message.Content == "" || resp.Usage.TotalTokens == 0 {
		t.Fatalf("chat on claude-vertex: %v %+v", err, resp)
	}
	if r := e.lastVertex(t); !strings.HasSuffix(r.Path, ":rawPredict") || !strings.Contains(r.Body, `"system"`) || strings.Contains(r.Body, `"model"`) {
		t.Fatalf("claude chat upstream %s: %s", r.Path, r.Body)
	}

	// Partner model on the OpenAI-compatible endpoint.
	acc, _, err := streamChat(t, e.client, chatParams("llama"))
	if err != nil || acc.Model != "llama" || len(acc.Choices[0].Message.Content) != 40 {
		t.Fatalf("llama: %v %+v", err, acc)
	}
	r = e.lastVertex(t)
	if !strings.HasSuffix(r.Path, "/locations/us-central1/endpoints/openapi/chat/completions") || !strings.Contains(r.Body, `"model":"meta/llama-3.3-70b-instruct-maas"`) ||
		!strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ya29.mock-") {
		t.Fatalf("llama upstream %s: %s", r.Path, r.Body)
	}
}

// TestVertexTokenRefresh: access tokens live 3s; requests keep flowing
// across several expiries, and one comes after the cached token expired
// unused. No request fails, and the token endpoint is asked again.
func TestVertexTokenRefresh(t *testing.T) {
	e := startVertexE2E(t, "3s")
	ctx := context.Background()
	before := mock.VertexTokensIssued()
	deadline := time.Now().Add(7 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		if _, err := e.client.Chat.Completions.New(ctx, chatParams("gemini")); err != nil {
			t.Fatalf("request %d failed: %v", n, err)
		}
		n++
		time.Sleep(50 * time.Millisecond)
	}
	mid := mock.VertexTokensIssued()
	if mid-before < 2 {
		t.Fatalf("%d requests over 7s used %d tokens; want refreshes", n, mid-before)
	}
	time.Sleep(3500 * time.Millisecond) // the cached token expires unused
	if _, _, err := streamChat(t, e.client, chatParams("gemini")); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if mock.VertexTokensIssued() == mid {
		t.Fatal("no new token after expiry")
	}
}
