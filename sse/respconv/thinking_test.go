package respconv_test

import (
	"encoding/json"
	"testing"

	"gw/sse/respconv"
)

// TestThinkingThroughResponses: the thinking_blocks of an Anthropic
// upstream's chat answer become reasoning items with encrypted_content
// (buffered and streamed), and those items, sent back as input, become the
// thinking_blocks of the assistant message again; OpenAI's own
// encrypted_content is still dropped.
func TestThinkingThroughResponses(t *testing.T) {
	wantItems := `[{"type":"reasoning","summary":[{"type":"summary_text","text":"Let me \"check\"."}],"encrypted_content":"thinking:sig-1"},
		{"type":"reasoning","summary":[],"encrypted_content":"redacted_thinking:opaque=="}]`
	wantBlocks := `[{"type":"thinking","thinking":"Let me \"check\".","signature":"sig-1"},{"type":"redacted_thinking","data":"opaque=="}]`
	reasoningItems := func(output []any) []any {
		var out []any
		for _, it := range output {
			m := it.(map[string]any)
			if m["type"] == "reasoning" {
				delete(m, "id")
				out = append(out, m)
			}
		}
		return out
	}
	roundTrip := func(name string, output []any) {
		t.Helper()
		input, _ := json.Marshal(append([]any{map[string]any{"role": "user", "content": "q"}}, output...))
		chat, err := respconv.ResponsesRequestToChat(nil, []byte(`{"model":"m","input":`+string(input)+`}`), respconv.RequestOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		msgs := obj(t, string(chat))["messages"].([]any)
		blocks, _ := json.Marshal(get(msgs[1], "thinking_blocks"))
		sameJSON(t, name+": thinking_blocks sent back", blocks, wantBlocks)
	}

	// Buffered.
	body := `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"up","choices":[{"index":0,"message":{"role":"assistant",
		"content":"Checking.","reasoning_content":"Let me \"check\".",
		"thinking_blocks":[{"type":"thinking","thinking":"Let me \"check\".","signature":"sig-1"},{"type":"redacted_thinking","data":"opaque=="},{"type":"thinking","thinking":"unsigned"}]},
		"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	out, _, err := respconv.ChatResponseToResponses(nil, []byte(body), respconv.ResponseOptions{Model: []byte(`"alias"`)})
	if err != nil {
		t.Fatal(err)
	}
	output := obj(t, string(out))["output"].([]any)
	items, _ := json.Marshal(reasoningItems(output))
	sameJSON(t, "buffered items", items, wantItems)
	roundTrip("buffered", output)

	// Streamed: reasoning deltas, then the signature, then a redacted block.
	st := respconv.NewChatToResponsesStream()
	defer respconv.ReleaseStream(st)
	stream := chunk(`{"role":"assistant","content":""}`, "") +
		chunk(`{"reasoning_content":"Let me "}`, "") + chunk(`{"reasoning_content":"\"check\"."}`, "") +
		chunk(`{"thinking_blocks":[{"type":"thinking","thinking":"","signature":"sig-1"}]}`, "") +
		chunk(`{"thinking_blocks":[{"type":"redacted_thinking","data":"opaque=="}]}`, "") +
		chunk(`{"content":"Checking."}`, "") + chunk(`{}`, "stop") + "data: [DONE]\n\n"
	for _, sizes := range splits() {
		out, err := runStream(t, st, "alias", []byte(stream), sizes)
		if err != nil {
			t.Fatal(err)
		}
		var completed map[string]any
		for _, ev := range parseSSE(t, out, nil) {
			if ev.Name == "response.completed" {
				completed = obj(t, ev.Data)
			}
		}
		output := get(completed, "response", "output").([]any)
		items := reasoningItems(output)
		// The streamed item's summary holds the text the deltas carried.
		b, _ := json.Marshal(items)
		sameJSON(t, "streamed items", b, `[{"type":"reasoning","summary":[{"type":"summary_text","text":"Let me \"check\"."}],"encrypted_content":"thinking:sig-1"},
			{"type":"reasoning","summary":[{"type":"summary_text","text":""}],"encrypted_content":"redacted_thinking:opaque=="}]`)
		roundTrip("streamed", output)
	}

	// OpenAI's encrypted reasoning has no chat form.
	chat, err := respconv.ResponsesRequestToChat(nil, []byte(`{"model":"m","input":[{"role":"user","content":"q"},
		{"type":"reasoning","summary":[],"encrypted_content":"gAAAAB"},{"role":"assistant","content":"a"}]}`), respconv.RequestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "openai reasoning", chat, `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`)
}
