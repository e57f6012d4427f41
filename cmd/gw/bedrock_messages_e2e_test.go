package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"

	"gw/perf/mock"
)

// bedrockMessagesFile serves Claude on Bedrock to Messages callers:
// natively through InvokeModel (claude, and a throttled copy in a group),
// and converted through Converse for a Claude application inference profile
// whose id does not name Claude (profile: the key turns thinking on with a
// default body field, so the Converse answer carries a reasoning signature).
const bedrockMessagesFile = `_format_version: "1"
provider_keys:
  - {display_name: br, adapter: bedrock, api_key: "${E2E_BEDROCK_CREDS}", api_base: "${E2E_MOCK_BASE}"}
  - {display_name: br-throttled, adapter: bedrock, api_key: "${E2E_BEDROCK_CREDS}", api_base: "${E2E_MOCK_BASE}/knobs/stream_error_after=0"}
  - display_name: br-reasoning
    adapter: bedrock
    api_key: ${E2E_BEDROCK_CREDS}
    api_base: ${E2E_MOCK_BASE}
    request:
      default_body_fields: {additionalModelRequestFields: {thinking: {type: enabled, budget_tokens: 1024}}}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: claude, provider: bedrock, model_name: "us.anthropic.claude-3-7-sonnet-20250219-v1:0", provider_key: br}
  - {display_name: claude-throttled, provider: bedrock, model_name: "us.anthropic.claude-3-7-sonnet-20250219-v1:0", provider_key: br-throttled}
  - display_name: claude-group
    routing:
      targets: [{model: claude-throttled, priority: 1}, {model: claude}]
      retry_on_429: true
  - {display_name: profile, provider: bedrock, model_name: "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3", provider_key: br-reasoning}
`

// TestBedrockMessagesE2E: Messages callers (anthropic-sdk-go) on Claude on
// Bedrock through the binary against the mock, which checks every SigV4
// signature and refuses thinking blocks without their signature.
func TestBedrockMessagesE2E(t *testing.T) {
	m := startMock(t, "E2E_MOCK_BASE", mock.Config{})
	t.Setenv("E2E_BEDROCK_CREDS", `{"access_key_id":"`+mock.BedrockAccessKeyID+`","secret_access_key":"`+mock.BedrockSecretAccessKey+`","region":"us-east-1"}`)
	g := startGW(t, writeTemp(t, "bedrock-messages.yaml", bedrockMessagesFile))
	ac := anthropic.NewClient(aoption.WithBaseURL("http://"+g.addr), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	ctx := context.Background()
	last := func(t *testing.T) mock.RecordedRequest {
		t.Helper()
		reqs := m.Requests()
		if len(reqs) == 0 {
			t.Fatal("the mock got no request")
		}
		return reqs[len(reqs)-1]
	}
	stream := func(t *testing.T, p anthropic.MessageNewParams, opts ...aoption.RequestOption) anthropic.Message {
		t.Helper()
		st := ac.Messages.NewStreaming(ctx, p, opts...)
		msg := anthropic.Message{}
		for st.Next() {
			if err := msg.Accumulate(st.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	question := anthropic.NewUserMessage(anthropic.NewTextBlock("Is it safe to cross?"))

	t.Run("native thinking streamed and continued", func(t *testing.T) {
		p := anthropic.MessageNewParams{
			Model: "claude", MaxTokens: 2048, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
			System:   []anthropic.TextBlockParam{{Text: "Be brief.", CacheControl: anthropic.NewCacheControlEphemeralParam()}},
			Messages: []anthropic.MessageParam{question},
		}
		msg := stream(t, p, aoption.WithHeader("anthropic-beta", "interleaved-thinking-2025-05-14"))
		if string(msg.Model) != "claude" || len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[1].Type != "text" ||
			msg.Content[0].Signature == "" || msg.Content[0].Thinking == "" || msg.Usage.OutputTokens == 0 || msg.StopReason != "end_turn" {
			t.Fatalf("native stream: %+v", msg)
		}
		r := last(t)
		if r.Path != "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/invoke-with-response-stream" ||
			!strings.Contains(r.Body, `"anthropic_version":"bedrock-2023-05-31"`) || !strings.Contains(r.Body, `"cache_control":{"type":"ephemeral"}`) ||
			!strings.Contains(r.Body, `"anthropic_beta":["interleaved-thinking-2025-05-14"]`) || strings.Contains(r.Body, `"model"`) {
			t.Fatalf("upstream request %s %s", r.Path, r.Body)
		}
		// The next turn sends the thinking block back (the mock refuses it
		// without its signature), buffered.
		p.Messages = append(p.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And now?")))
		out, err := ac.Messages.New(ctx, p)
		if err != nil || string(out.Model) != "claude" || len(out.Content) == 0 || out.Content[len(out.Content)-1].Text == "" {
			t.Fatalf("second turn: %v %+v", err, out)
		}
		r = last(t)
		if r.Path != "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/invoke" || !strings.Contains(r.Body, `"signature":"`+msg.Content[0].Signature+`"`) {
			t.Fatalf("second turn upstream %s %s", r.Path, r.Body)
		}
	})

	t.Run("native throttling fails over", func(t *testing.T) {
		st := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-throttled", MaxTokens: 64, Messages: []anthropic.MessageParam{question}})
		for st.Next() {
		}
		var apiErr *anthropic.Error
		if !errors.As(st.Err(), &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || !strings.Contains(apiErr.RawJSON(), "rate_limit_error") {
			t.Fatalf("throttled stream: %v", st.Err())
		}
		msg := stream(t, anthropic.MessageNewParams{Model: "claude-group", MaxTokens: 64, Messages: []anthropic.MessageParam{question}})
		if string(msg.Model) != "claude-group" || len(msg.Content) != 1 || msg.Content[0].Text == "" {
			t.Fatalf("group: %+v", msg)
		}
	})

	t.Run("converted Converse keeps the signature", func(t *testing.T) {
		p := anthropic.MessageNewParams{Model: "profile", MaxTokens: 2048, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
			Messages: []anthropic.MessageParam{question}}
		msg := stream(t, p)
		if len(msg.Content) < 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Signature != "mock-signature" || msg.Content[0].Thinking == "" {
			t.Fatalf("converted stream: %+v", msg.Content)
		}
		if r := last(t); !strings.HasSuffix(r.Path, "/converse-stream") {
			t.Fatalf("upstream path %s", r.Path)
		}
		out, err := ac.Messages.New(ctx, p)
		if err != nil || len(out.Content) < 2 || out.Content[0].Type != "thinking" || out.Content[0].Signature != "mock-signature" {
			t.Fatalf("converted buffered: %v %+v", err, out)
		}
		p.Messages = append(p.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And now?")))
		if _, err := ac.Messages.New(ctx, p); err != nil {
			t.Fatal(err)
		}
		if r := last(t); !strings.Contains(r.Body, `"signature":"mock-signature"`) || !strings.Contains(r.Body, `"reasoningContent"`) {
			t.Fatalf("second turn upstream body lacks the signed reasoning: %s", r.Body)
		}
	})
}
