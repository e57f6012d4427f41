package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
)

// TestMessagesSurfaceSDK: the official Anthropic SDK works through gw
// against a chat-completions upstream — buffered, streaming, tool use,
// count_tokens and errors in Anthropic's envelope.
func TestMessagesSurfaceSDK(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	base := strings.TrimSuffix(e.base, "/v1")
	client := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("caller-e2e"), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model:     "gpt",
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
	}
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Model) != "gpt" || len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.StopReason != "end_turn" || msg.Usage.OutputTokens == 0 {
		t.Fatalf("message: %+v", msg)
	}
	last := e.mock.Requests()[len(e.mock.Requests())-1]
	if !strings.HasSuffix(last.Path, "/chat/completions") || !strings.Contains(last.Body, `"role":"system"`) {
		t.Fatalf("upstream request: %s %s", last.Path, last.Body)
	}

	// Streaming, accumulated with the SDK's own accumulator.
	st := client.Messages.NewStreaming(ctx, params)
	acc := anthropic.Message{}
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if string(acc.Model) != "gpt" || len(acc.Content) == 0 || acc.Content[0].Text == "" || acc.StopReason != "end_turn" {
		t.Fatalf("streamed message: %+v", acc)
	}

	// Tool use: the upstream's tool calls come back as tool_use blocks.
	tp := params
	tp.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}
	msg, err = client.Messages.New(ctx, tp, aoption.WithHeader("x-mock-tool-calls", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "tool_use" || msg.Content[len(msg.Content)-1].Type != "tool_use" {
		t.Fatalf("tool use: %+v", msg)
	}

	// count_tokens.
	ct, err := client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "gpt", Messages: params.Messages})
	if err != nil || ct.InputTokens <= 0 {
		t.Fatalf("count_tokens: %v %+v", err, ct)
	}

	// Errors use Anthropic's envelope and types.
	bad := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("wrong"), aoption.WithMaxRetries(0))
	_, err = bad.Messages.New(ctx, params)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(ae.RawJSON(), `"authentication_error"`) {
		t.Fatalf("bad key: %v", err)
	}
	p404 := params
	p404.Model = "nope"
	_, err = client.Messages.New(ctx, p404)
	if !errors.As(err, &ae) || ae.StatusCode != 404 || !strings.Contains(ae.RawJSON(), `"not_found_error"`) {
		t.Fatalf("unknown model: %v", err)
	}
	// An upstream 529-style overload is relayed in the Messages envelope.
	_, err = client.Messages.New(ctx, params, aoption.WithHeader("x-mock-status", "503"))
	if !errors.As(err, &ae) || ae.StatusCode != 503 || !strings.Contains(ae.RawJSON(), `"overloaded_error"`) {
		t.Fatalf("upstream 503: %v", err)
	}
	// A mid-stream failure ends with an error event, not a clean message_stop.
	st = client.Messages.NewStreaming(ctx, params, aoption.WithHeader("x-mock-fail-after", "2"))
	for st.Next() {
	}
	if st.Err() == nil {
		t.Fatal("mid-stream failure ended cleanly")
	}
}

// TestMessagesStartUsage: on a chat-completions upstream, message_start
// carries gw's input estimate (the upstream reports usage only at the end)
// and message_delta the upstream's exact counts.
func TestMessagesStartUsage(t *testing.T) {
	e := startE2E(t)
	body := `{"model":"gpt","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Say hello to everyone in the room"}]}`
	raw := postRaw(t, e.base+"/messages", body)
	events := strings.Split(strings.TrimSpace(raw), "\n\n")
	var start struct {
		Message struct {
			Usage struct {
				InputTokens int `json:"input_tokens"`
			} `json:"usage"`
		} `json:"message"`
	}
	var delta struct {
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	for _, ev := range events {
		switch {
		case strings.HasPrefix(ev, "event: message_start\n"):
			json.Unmarshal([]byte(dataOf(ev)), &start)
		case strings.HasPrefix(ev, "event: message_delta\n"):
			json.Unmarshal([]byte(dataOf(ev)), &delta)
		}
	}
	if start.Message.Usage.InputTokens != len(body)/4 {
		t.Fatalf("message_start input_tokens %d; want the estimate %d (%s)", start.Message.Usage.InputTokens, len(body)/4, raw)
	}
	if delta.Usage.InputTokens == 0 || delta.Usage.OutputTokens == 0 {
		t.Fatalf("message_delta usage %+v", delta.Usage)
	}
}
