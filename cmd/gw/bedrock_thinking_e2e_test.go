package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestBedrockThinkingSignatureRoundTripE2E: a chat caller on Claude on
// Bedrock gets the reasoning signature in thinking_blocks (streamed and
// buffered) and, sending the blocks back with its next turn, reaches the
// upstream with a signed reasoningContent block: a multi-turn conversation
// with thinking can be continued.
func TestBedrockThinkingSignatureRoundTripE2E(t *testing.T) {
	e := startBedrockE2E(t)
	ctx := context.Background()

	// Streamed: the signature arrives as a thinking_blocks delta.
	p := chatParams("claude")
	p.ReasoningEffort = "low"
	st := e.client.Chat.Completions.NewStreaming(ctx, p)
	var sig string
	for st.Next() {
		c := st.Current()
		if len(c.Choices) == 0 {
			continue
		}
		var d struct {
			Blocks []struct {
				Type      string `json:"type"`
				Signature string `json:"signature"`
			} `json:"thinking_blocks"`
		}
		_ = json.Unmarshal([]byte(c.Choices[0].Delta.RawJSON()), &d)
		for _, b := range d.Blocks {
			if b.Type == "thinking" {
				sig = b.Signature
			}
		}
	}
	if err := st.Err(); err != nil || sig != "mock-signature" {
		t.Fatalf("stream: %v, signature %q", err, sig)
	}

	// Buffered: the message carries reasoning_content and thinking_blocks.
	raw := postRaw(t, e.base+"/chat/completions", `{"model":"claude","reasoning_effort":"low","messages":[{"role":"user","content":"Say hello"}]}`)
	var resp struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(raw), &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("buffered: %v %s", err, raw)
	}
	var msg struct {
		Reasoning string `json:"reasoning_content"`
		Blocks    []struct {
			Type, Thinking, Signature string
		} `json:"thinking_blocks"`
	}
	if err := json.Unmarshal(resp.Choices[0].Message, &msg); err != nil || msg.Reasoning == "" || len(msg.Blocks) != 1 ||
		msg.Blocks[0].Signature != "mock-signature" || msg.Blocks[0].Thinking != msg.Reasoning {
		t.Fatalf("buffered message: %v %s", err, resp.Choices[0].Message)
	}

	// The next turn sends the assistant message back as it came.
	next := `{"model":"claude","reasoning_effort":"low","messages":[{"role":"user","content":"Say hello"},` +
		string(resp.Choices[0].Message) + `,{"role":"user","content":"Again"}]}`
	if out := postRaw(t, e.base+"/chat/completions", next); !strings.Contains(out, `"chat.completion"`) {
		t.Fatalf("second turn: %s", out)
	}
	body := e.lastRequest(t).Body
	if !strings.Contains(body, `{"reasoningContent":{"reasoningText":{"text":`+mustJSON(msg.Reasoning)+`,"signature":"mock-signature"}}}`) {
		t.Fatalf("second turn upstream body lacks the signed reasoning: %s", body)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
