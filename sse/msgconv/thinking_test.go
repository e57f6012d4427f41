package msgconv_test

import (
	"strings"
	"testing"

	"gw/sse/msgconv"
)

// TestThinkingRoundTrip: the thinking blocks of an Anthropic answer reach a
// chat caller with their signatures (buffered and streamed), and the
// assistant message the caller sends back restores them, first in the
// turn, so a tool loop with thinking can continue.
func TestThinkingRoundTrip(t *testing.T) {
	// Buffered: thinking, redacted thinking, text, tool use.
	answer := `{"id":"msg_9","type":"message","model":"claude-x","content":[
		{"type":"thinking","thinking":"Let me \"check\".","signature":"sig-1"},
		{"type":"redacted_thinking","data":"opaque=="},
		{"type":"text","text":"Checking."},
		{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}],
		"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":3}}`
	chat, _, err := msgconv.MessagesResponseToChat(nil, []byte(answer), []byte("alias"))
	if err != nil {
		t.Fatal(err)
	}
	msg := decode(t, chat).(map[string]any)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	sameJSON(t, mustJSON(t, msg["thinking_blocks"]),
		`[{"type":"thinking","thinking":"Let me \"check\".","signature":"sig-1"},{"type":"redacted_thinking","data":"opaque=="}]`)

	// The caller sends the assistant message back with a tool result.
	msg["role"] = "assistant"
	next := `{"model":"alias","messages":[{"role":"user","content":"Weather in Oslo?"},` + string(mustJSON(t, msg)) +
		`,{"role":"tool","tool_call_id":"toolu_1","content":"sunny"}]}`
	body, err := msgconv.ChatRequestToMessages(nil, []byte(next), msgconv.RequestOptions{UpstreamModel: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	turns := decode(t, body).(map[string]any)["messages"].([]any)
	sameJSON(t, mustJSON(t, turns[1]), `{"role":"assistant","content":[
		{"type":"thinking","thinking":"Let me \"check\".","signature":"sig-1"},
		{"type":"redacted_thinking","data":"opaque=="},
		{"type":"text","text":"Checking."},
		{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}]}`)

	// Streamed: the signature arrives as a thinking block with an empty
	// text; sent back, the block takes the message's reasoning_content.
	s := msgconv.AcquireMessagesToChatStream([]byte("m"))
	defer msgconv.ReleaseMessagesToChatStream(s)
	out := m2c(t, s, true,
		"message_start", evStart,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-2"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
		"message_stop", `{"type":"message_stop"}`)
	res := assembleChat(t, []byte(out))
	if res.Reasoning != "hm" || len(res.Blocks) != 1 || res.Blocks[0] != "thinking::sig-2" {
		t.Fatalf("streamed: %+v\n%s", res, out)
	}
	back := `{"model":"alias","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_content":"hm",
		"thinking_blocks":[{"type":"thinking","thinking":"","signature":"sig-2"}]},{"role":"user","content":"more"}]}`
	body, err = msgconv.ChatRequestToMessages(nil, []byte(back), msgconv.RequestOptions{UpstreamModel: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	turns = decode(t, body).(map[string]any)["messages"].([]any)
	sameJSON(t, mustJSON(t, turns[1]), `{"role":"assistant","content":[
		{"type":"thinking","thinking":"hm","signature":"sig-2"},{"type":"text","text":"a"}]}`)

	// Blocks without a signature or data cannot be verified upstream: dropped.
	c2mReqCase(t, msgconv.RequestOptions{}, `{"messages":[{"role":"assistant","content":"a",
		"thinking_blocks":[{"type":"thinking","thinking":"x"},{"type":"redacted_thinking"},{"type":"other"}]}]}`,
		`{"model":"claude","max_tokens":4096,"messages":[{"role":"assistant","content":"a"}]}`)
	if _, err := msgconv.ChatRequestToMessages(nil, []byte(`{"messages":[{"role":"assistant","thinking_blocks":{}}]}`),
		msgconv.RequestOptions{UpstreamModel: "c"}); err == nil || !strings.Contains(err.Error(), "thinking_blocks") {
		t.Fatalf("thinking_blocks object: %v", err)
	}
}

// TestTextBlockSeparator: text blocks that another block separates are two
// paragraphs (BlockSeparator between them); adjacent ones (a passage split
// at citations) are joined as they are. Buffered and streamed agree.
func TestTextBlockSeparator(t *testing.T) {
	answer := `{"id":"msg_9","type":"message","model":"claude-x","content":[
		{"type":"text","text":"Let me search."},
		{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},
		{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},
		{"type":"text","text":"Paris is "},
		{"type":"text","text":"the capital","citations":[{"type":"web_search_result_location"}]},
		{"type":"text","text":"."}],
		"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":3}}`
	chat, _, err := msgconv.MessagesResponseToChat(nil, []byte(answer), nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = "Let me search.\n\nParis is the capital."
	got := decode(t, chat).(map[string]any)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
	if got != want {
		t.Fatalf("buffered content %q; want %q", got, want)
	}

	s := msgconv.AcquireMessagesToChatStream([]byte("m"))
	defer msgconv.ReleaseMessagesToChatStream(s)
	out := m2c(t, s, true,
		"message_start", evStart,
		"", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		"", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me search."}}`,
		"", `{"type":"content_block_stop","index":0}`,
		"", `{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		"", `{"type":"content_block_stop","index":1}`,
		"", `{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}`,
		"", `{"type":"content_block_stop","index":2}`,
		"", `{"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}`,
		"", `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"Paris is "}}`,
		"", `{"type":"content_block_stop","index":3}`,
		"", `{"type":"content_block_start","index":4,"content_block":{"type":"text","text":"","citations":[]}}`,
		"", `{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"the capital"}}`,
		"", `{"type":"content_block_stop","index":4}`,
		"", `{"type":"content_block_start","index":5,"content_block":{"type":"text","text":"."}}`,
		"", `{"type":"content_block_stop","index":5}`,
		"", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
		"", `{"type":"message_stop"}`)
	if res := assembleChat(t, []byte(out)); res.Content != want {
		t.Fatalf("streamed content %q; want %q", res.Content, want)
	}
}
