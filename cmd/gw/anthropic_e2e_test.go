package main

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"
)

// TestAnthropicUpstream: every caller format against a model on an
// Anthropic (messages-protocol) provider key.
func TestAnthropicUpstream(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	lastUpstream := func() (path, body, apiKey, version string) {
		r := e.mock.Requests()[len(e.mock.Requests())-1]
		return r.Path, r.Body, r.Header.Get("x-api-key"), r.Header.Get("anthropic-version")
	}

	// Chat caller, buffered.
	p := chatParams("claude")
	p.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief.")}, p.Messages...)
	resp, err := e.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "claude" || resp.Choices[0].Message.Content == "" || resp.Usage.TotalTokens == 0 || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("chat via anthropic: %+v", resp)
	}
	path, body, key, version := lastUpstream()
	if !strings.HasSuffix(path, "/v1/messages") || key != "sk-e2e" || version == "" {
		t.Fatalf("upstream request: %s key %q version %q", path, key, version)
	}
	if !strings.Contains(body, `"system"`) || !strings.Contains(body, `"model":"claude-sonnet-4-5"`) || !strings.Contains(body, `"ttl":"1h"`) {
		t.Fatalf("upstream body (system, model, cache breakpoints): %s", body)
	}

	// Chat caller, streaming with usage and parallel tool calls.
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	p.Tools = []openai.ChatCompletionToolParam{{Function: openai.FunctionDefinitionParam{Name: "get_weather"}}}
	st := e.client.Chat.Completions.NewStreaming(ctx, p, option.WithHeader("x-mock-tool-calls", "2"))
	acc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Model != "claude" || len(acc.Choices) == 0 || len(acc.Choices[0].Message.ToolCalls) != 2 || acc.Usage.TotalTokens == 0 {
		t.Fatalf("streamed tool calls via anthropic: %+v", acc.ChatCompletion)
	}

	// A mid-stream Anthropic error event ends the chat stream with an error.
	st = e.client.Chat.Completions.NewStreaming(ctx, chatParams("claude"), option.WithHeader("x-mock-stream-error-after", "2"))
	for st.Next() {
	}
	if st.Err() == nil {
		t.Fatal("anthropic mid-stream error ended the chat stream cleanly")
	}

	// Anthropic SDK caller: a tool-use conversation streamed through gw.
	base := strings.TrimSuffix(e.base, "/v1")
	ac := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	mp := anthropic.MessageNewParams{
		Model: "claude", MaxTokens: 256,
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
	if string(msg.Model) != "claude" || msg.StopReason != "tool_use" || msg.Content[len(msg.Content)-1].Type != "tool_use" {
		t.Fatalf("anthropic SDK via gw to anthropic: %+v", msg)
	}

	// Responses caller to the anthropic upstream, streaming.
	rs := e.client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "claude", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")},
	})
	completed := false
	var text strings.Builder
	for rs.Next() {
		ev := rs.Current()
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta.OfString)
		}
		if ev.Type == "response.completed" {
			completed = true
		}
	}
	if err := rs.Err(); err != nil || !completed || text.Len() == 0 {
		t.Fatalf("responses via anthropic: err %v completed %v text %q", err, completed, text.String())
	}
}

// TestAnthropicNativePassThrough: a /v1/messages caller on an Anthropic key
// reaches the upstream with its body unchanged but for the model, so
// Anthropic-only fields (thinking, cache_control, metadata) survive.
func TestAnthropicNativePassThrough(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	base := strings.TrimSuffix(e.base, "/v1")
	ac := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	mp := anthropic.MessageNewParams{
		Model: "claude", MaxTokens: 2048,
		System:   []anthropic.TextBlockParam{{Text: "Be brief.", CacheControl: anthropic.NewCacheControlEphemeralParam()}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
		Metadata: anthropic.MetadataParam{UserID: anthropic.String("user-42")},
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
	}
	msg, err := ac.Messages.New(ctx, mp)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Model) != "claude" || msg.Content[0].Text == "" || msg.Usage.InputTokens == 0 {
		t.Fatalf("native message: %+v", msg)
	}
	last := e.mock.Requests()[len(e.mock.Requests())-1]
	for _, want := range []string{`"model":"claude-sonnet-4-5"`, `"thinking":{`, `"budget_tokens":1024`, `"cache_control":{`, `"user_id":"user-42"`} {
		if !strings.Contains(last.Body, want) {
			t.Fatalf("native body lacks %s: %s", want, last.Body)
		}
	}
	// Streaming: events relayed with the alias in message_start.
	st := ac.Messages.NewStreaming(ctx, mp)
	acc := anthropic.Message{}
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if string(acc.Model) != "claude" || acc.Content[0].Text == "" || acc.StopReason != "end_turn" {
		t.Fatalf("native stream: %+v", acc)
	}
	// An upstream error event mid-stream reaches the caller as an error.
	st = ac.Messages.NewStreaming(ctx, mp, aoption.WithHeader("x-mock-stream-error-after", "2"))
	for st.Next() {
	}
	if st.Err() == nil {
		t.Fatal("native stream error ended cleanly")
	}
}
