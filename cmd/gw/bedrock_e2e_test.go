package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"

	"gw/perf/mock"
)

// bedrockFile serves Bedrock keys against the in-process mock, which
// checks every SigV4 signature with the AWS SDK's signer.
const bedrockFile = `_format_version: "1"
provider_keys:
  - display_name: bedrock
    adapter: bedrock
    api_key: ${E2E_BEDROCK_CREDS}
    api_base: ${E2E_MOCK_BASE}
    request:
      forward_client_headers: ["x-mock-*", "authorization", "x-amz-date"]
  - display_name: bedrock-throttled
    adapter: bedrock
    api_key: ${E2E_BEDROCK_CREDS}
    api_base: ${E2E_MOCK_BASE}/knobs/status=429
  - display_name: bedrock-stream-throttled
    adapter: bedrock
    api_key: ${E2E_BEDROCK_CREDS}
    api_base: ${E2E_MOCK_BASE}/knobs/stream_error_after=0
  - display_name: bedrock-wrong-secret
    adapter: bedrock
    api_key: ${E2E_BEDROCK_BAD_CREDS}
    api_base: ${E2E_MOCK_BASE}
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - display_name: nova
    provider: bedrock
    model_name: us.amazon.nova-micro-v1:0
    provider_key: bedrock
  - display_name: claude
    provider: bedrock
    model_name: us.anthropic.claude-3-7-sonnet-20250219-v1:0
    provider_key: bedrock
  - display_name: nova-throttled
    provider: bedrock
    model_name: us.amazon.nova-micro-v1:0
    provider_key: bedrock-throttled
  - display_name: nova-stream-throttled
    provider: bedrock
    model_name: us.amazon.nova-micro-v1:0
    provider_key: bedrock-stream-throttled
  - display_name: nova-bad-secret
    provider: bedrock
    model_name: us.amazon.nova-micro-v1:0
    provider_key: bedrock-wrong-secret
  - display_name: group
    routing:
      targets: [{model: nova-throttled, priority: 1}, {model: nova}]
      retry_on_429: true
  - display_name: stream-group
    routing:
      targets: [{model: nova-stream-throttled, priority: 1}, {model: nova}]
      retry_on_429: true
`

func startBedrockE2E(t *testing.T) *e2e {
	t.Helper()
	m := startMock(t, "E2E_MOCK_BASE", mock.Config{})
	t.Setenv("E2E_BEDROCK_CREDS", `{"access_key_id":"`+mock.BedrockAccessKeyID+`","secret_access_key":"`+mock.BedrockSecretAccessKey+`","session_token":"tok/en+1","region":"us-east-1"}`)
	t.Setenv("E2E_BEDROCK_BAD_CREDS", `{"access_key_id":"`+mock.BedrockAccessKeyID+`","secret_access_key":"wrong","region":"us-east-1"}`)
	g := startGW(t, writeTemp(t, "bedrock.yaml", bedrockFile))
	base := "http://" + g.addr + "/v1"
	return &e2e{gw: g, mock: m, base: base, client: openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))}
}

func (e *e2e) lastRequest(t *testing.T) mock.RecordedRequest {
	t.Helper()
	reqs := e.mock.Requests()
	if len(reqs) == 0 {
		t.Fatal("the mock got no request")
	}
	return reqs[len(reqs)-1]
}

func statusOf(err error) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

func TestBedrockChatE2E(t *testing.T) {
	e := startBedrockE2E(t)
	ctx := context.Background()

	// Buffered text, with a developer and a system message: both become
	// Converse system blocks; the model id is escaped in the signed path.
	p := chatParams("nova")
	p.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.DeveloperMessage("Answer in English.")}, p.Messages...)
	p.MaxTokens = openai.Int(100)
	resp, err := e.client.Chat.Completions.New(ctx, p, option.WithHeader("x-amz-date", "20000101T000000Z"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "nova" || resp.Choices[0].Message.Content == "" || resp.Usage.TotalTokens == 0 || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("buffered chat via bedrock: %+v", resp)
	}
	r := e.lastRequest(t)
	if r.Path != "/model/us.amazon.nova-micro-v1%3A0/converse" {
		t.Fatalf("upstream path %q", r.Path)
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+mock.BedrockAccessKeyID+"/") || r.Header.Get("X-Amz-Security-Token") != "tok/en+1" ||
		r.Header.Get("X-Amz-Date") == "20000101T000000Z" {
		t.Fatalf("upstream signature headers: %v", r.Header)
	}
	if !strings.Contains(r.Body, `"system":[{"text":"Be brief.\n\nAnswer in English."}]`) || !strings.Contains(r.Body, `"inferenceConfig":{"maxTokens":100}`) || strings.Contains(r.Body, `"model"`) {
		t.Fatalf("upstream body: %s", r.Body)
	}

	// Streamed parallel tool calls with streamed arguments, and usage.
	p = chatParams("nova")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	p.Tools = []openai.ChatCompletionToolParam{{Function: openai.FunctionDefinitionParam{Name: "get_weather"}}, {Function: openai.FunctionDefinitionParam{Name: "get_time"}}}
	st := e.client.Chat.Completions.NewStreaming(ctx, p, option.WithHeader("x-mock-tool-calls", "2"), option.WithHeader("x-mock-chunks", "4"))
	acc := openai.ChatCompletionAccumulator{}
	argChunks := 0
	for st.Next() {
		c := st.Current()
		acc.AddChunk(c)
		if len(c.Choices) > 0 && len(c.Choices[0].Delta.ToolCalls) > 0 && c.Choices[0].Delta.ToolCalls[0].Function.Arguments != "" {
			argChunks++
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	calls := acc.Choices[0].Message.ToolCalls
	if acc.Model != "nova" || len(calls) != 2 || calls[0].Function.Name != "get_weather" || calls[1].Function.Name != "get_time" ||
		!strings.HasPrefix(calls[0].Function.Arguments, `{"query":"`) || argChunks < 4 || acc.Usage.TotalTokens == 0 || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("streamed tool calls via bedrock (%d argument chunks): %+v", argChunks, acc.ChatCompletion)
	}
	if r := e.lastRequest(t); r.Path != "/model/us.amazon.nova-micro-v1%3A0/converse-stream" || !strings.Contains(r.Body, `"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather"`) {
		t.Fatalf("upstream stream request %s: %s", r.Path, r.Body)
	}

	// The recorded Nova Micro stream, replayed byte for byte by the mock.
	p = chatParams("nova")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	p.Tools = []openai.ChatCompletionToolParam{{Function: openai.FunctionDefinitionParam{Name: "get_temperature"}}}
	st = e.client.Chat.Completions.NewStreaming(ctx, p)
	acc = openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	m := acc.Choices[0].Message
	if !strings.HasPrefix(m.Content, "<thinking> To find the temperature") || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` ||
		m.ToolCalls[0].ID != "tooluse_lAG_zP8QRHmSYOwZzzaCqA" || acc.Usage.PromptTokens != 471 || acc.Usage.CompletionTokens != 91 {
		t.Fatalf("fixture replay: %+v usage %+v", m, acc.Usage)
	}

	// Reasoning on a Claude model, and an image in.
	p = chatParams("claude")
	p.ReasoningEffort = "low"
	p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
		openai.TextContentPart("What is this?"),
		openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBORw0KGgo="}),
	})}
	st = e.client.Chat.Completions.NewStreaming(ctx, p)
	reasoning, text := 0, ""
	for st.Next() {
		c := st.Current()
		if len(c.Choices) > 0 {
			if strings.Contains(c.Choices[0].Delta.RawJSON(), `"reasoning_content"`) {
				reasoning++
			}
			text += c.Choices[0].Delta.Content
		}
	}
	if err := st.Err(); err != nil || reasoning != 2 || text == "" {
		t.Fatalf("reasoning stream: err %v, %d reasoning chunks, text %q", err, reasoning, text)
	}
	r = e.lastRequest(t)
	if !strings.Contains(r.Body, `{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}`) ||
		!strings.Contains(r.Body, `"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":1024}}`) ||
		r.Path != "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream" {
		t.Fatalf("reasoning/image request %s: %s", r.Path, r.Body)
	}

	// A mid-stream modelStreamErrorException ends the committed stream with an error.
	st = e.client.Chat.Completions.NewStreaming(ctx, chatParams("nova"), option.WithHeader("x-mock-stream-error-after", "2"))
	got := ""
	for st.Next() {
		if c := st.Current(); len(c.Choices) > 0 {
			got += c.Choices[0].Delta.Content
		}
	}
	if st.Err() == nil || got == "" {
		t.Fatalf("mid-stream exception: err %v after %q", st.Err(), got)
	}

	// Throttling: HTTP 429 and an in-band throttlingException before any
	// content both answer 429 alone, and fail over in a routing group.
	if _, err := e.client.Chat.Completions.New(ctx, chatParams("nova-throttled")); statusOf(err) != 429 {
		t.Fatalf("throttled buffered: %v", err)
	}
	st = e.client.Chat.Completions.NewStreaming(ctx, chatParams("nova-stream-throttled"))
	for st.Next() {
	}
	if statusOf(st.Err()) != 429 {
		t.Fatalf("in-band throttling before content: %v", st.Err())
	}
	before := len(e.mock.Requests())
	resp, err = e.client.Chat.Completions.New(ctx, chatParams("group"))
	if err != nil || resp.Choices[0].Message.Content == "" || len(e.mock.Requests()) != before+2 {
		t.Fatalf("failover after 429: %v %+v (%d upstream calls)", err, resp, len(e.mock.Requests())-before)
	}
	before = len(e.mock.Requests())
	st = e.client.Chat.Completions.NewStreaming(ctx, chatParams("stream-group"))
	acc = openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if st.Err() != nil || acc.Choices[0].Message.Content == "" || len(e.mock.Requests()) != before+2 {
		t.Fatalf("stream failover after in-band throttling: %v (%d upstream calls)", st.Err(), len(e.mock.Requests())-before)
	}

	// A wrong secret: the mock's signature check answers Bedrock's 403.
	req, _ := http.NewRequest("POST", e.base+"/chat/completions", strings.NewReader(`{"model":"nova-bad-secret","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer caller-e2e")
	hr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(hr.Body)
	hr.Body.Close()
	if hr.StatusCode != 403 || !strings.Contains(string(body), "signature we calculated does not match") {
		t.Fatalf("wrong secret: %d %s", hr.StatusCode, body)
	}
}

func TestBedrockCallerFormatsE2E(t *testing.T) {
	e := startBedrockE2E(t)
	ctx := context.Background()

	// Anthropic SDK caller: tool use streamed, native on Claude
	// (InvokeModelWithResponseStream, bedrock_messages_e2e_test.go).
	base := strings.TrimSuffix(e.base, "/v1")
	ac := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	mp := anthropic.MessageNewParams{
		Model: "claude", MaxTokens: 256,
		System:   []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
		Tools:    []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}},
	}
	ms := ac.Messages.NewStreaming(ctx, mp, aoption.WithHeader("x-mock-tool-calls", "1"))
	msg := anthropic.Message{}
	for ms.Next() {
		if err := msg.Accumulate(ms.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms.Err(); err != nil {
		t.Fatal(err)
	}
	if string(msg.Model) != "claude" || msg.StopReason != "tool_use" || msg.Content[len(msg.Content)-1].Type != "tool_use" || msg.Usage.InputTokens == 0 {
		t.Fatalf("anthropic SDK via gw to bedrock: %+v", msg)
	}
	if r := e.lastRequest(t); !strings.HasSuffix(r.Path, "/invoke-with-response-stream") || !strings.Contains(r.Body, `"text":"Be brief."`) ||
		!strings.Contains(r.Body, `"anthropic_version":"bedrock-2023-05-31"`) {
		t.Fatalf("upstream request: %s %s", r.Path, r.Body)
	}

	// Anthropic SDK, buffered.
	out, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "nova", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	if err != nil || len(out.Content) == 0 || out.Content[0].Text == "" || out.StopReason != "end_turn" {
		t.Fatalf("anthropic buffered via bedrock: %v %+v", err, out)
	}

	// Responses caller, streamed.
	rs := e.client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "nova", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")},
	})
	completed := false
	var text strings.Builder
	for rs.Next() {
		ev := rs.Current()
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta.OfString)
		}
		if ev.Type == "response.completed" {
			completed = ev.Response.Usage.TotalTokens > 0
		}
	}
	if err := rs.Err(); err != nil || !completed || text.Len() == 0 {
		t.Fatalf("responses via bedrock: err %v completed %v text %q", err, completed, text.String())
	}
}
