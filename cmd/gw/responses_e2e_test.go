package main

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/responses"
)

// TestResponsesSurfaceSDK: the official SDK's Responses API works through gw
// against a chat-completions upstream, buffered and streaming.
func TestResponsesSurfaceSDK(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model:        "gpt",
		Instructions: openai.String("Be brief."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")},
	}
	resp, err := e.client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "gpt" || resp.Status != "completed" || resp.OutputText() == "" || resp.Usage.TotalTokens == 0 {
		t.Fatalf("response: model %q status %q text %q usage %+v", resp.Model, resp.Status, resp.OutputText(), resp.Usage)
	}
	// The upstream received a chat-completions request with the instructions as a system message.
	reqs := e.mock.Requests()
	last := reqs[len(reqs)-1]
	if !strings.HasSuffix(last.Path, "/chat/completions") || !strings.Contains(last.Body, `"role":"system"`) {
		t.Fatalf("upstream request: %s %s", last.Path, last.Body)
	}

	st := e.client.Responses.NewStreaming(ctx, params)
	var text strings.Builder
	completed := false
	var lastSeq int64 = -1
	for st.Next() {
		ev := st.Current()
		if ev.SequenceNumber <= lastSeq {
			t.Fatalf("sequence numbers not increasing: %d after %d", ev.SequenceNumber, lastSeq)
		}
		lastSeq = ev.SequenceNumber
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta.OfString)
		case "response.completed":
			completed = true
			if ev.Response.Model != "gpt" || ev.Response.Usage.TotalTokens == 0 {
				t.Fatalf("completed: %+v", ev.Response)
			}
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if !completed || text.Len() == 0 {
		t.Fatalf("stream: completed %v text %q", completed, text.String())
	}

	// Stateless: previous_response_id is refused with a clear 400.
	p2 := params
	p2.PreviousResponseID = openai.String("resp_123")
	_, err = e.client.Responses.New(ctx, p2, option.WithMaxRetries(0))
	apiErr(t, err, 400, "")

	// A mid-stream upstream failure ends with response.failed.
	st = e.client.Responses.NewStreaming(ctx, params, option.WithHeader("x-mock-fail-after", "2"))
	failed := false
	for st.Next() {
		if st.Current().Type == "response.failed" {
			failed = true
		}
	}
	if !failed {
		t.Fatalf("mid-stream failure did not end with response.failed (err %v)", st.Err())
	}
}
