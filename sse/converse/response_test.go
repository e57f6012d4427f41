package converse

import (
	"errors"
	"strings"
	"testing"

	"gw/sse/transcode"
)

func TestResponseToChat(t *testing.T) {
	body := `{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"think","signature":"sig"}}},` +
		`{"text":"Hi "},{"text":"there"},{"toolUse":{"toolUseId":"t1","name":"f","input":{"a":[1,"x"]}}}]}},` +
		`"stopReason":"tool_use","usage":{"inputTokens":10,"outputTokens":4,"totalTokens":14,"cacheReadInputTokens":3},"metrics":{"latencyMs":5}}`
	out, u, err := ResponseToChat(nil, []byte(body), []byte("alias"))
	if err != nil {
		t.Fatal(err)
	}
	got := generated(string(out))
	for _, part := range []string{
		`"object":"chat.completion"`, `"model":"alias"`,
		`"message":{"role":"assistant","content":"Hi there","reasoning_content":"think","thinking_blocks":[{"type":"thinking","thinking":"think","signature":"sig"}],"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":[1,\"x\"]}"}}]}`,
		`"finish_reason":"tool_calls"`,
		`"usage":{"prompt_tokens":13,"completion_tokens":4,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":3}}`,
	} {
		if !contains(got, part) {
			t.Errorf("missing %s in\n%s", part, got)
		}
	}
	if u != (transcode.Usage{Prompt: 13, Completion: 4, Total: 17, Cached: 3}) {
		t.Errorf("usage %+v", u)
	}

	// Text after another block is a new paragraph; redacted reasoning and
	// unsigned reasoning (non-Claude models) have their own forms.
	out, _, err = ResponseToChat(nil, []byte(`{"output":{"message":{"content":[{"text":"a"},{"reasoningContent":{"redactedContent":"UkVE"}},{"text":"b"},{"reasoningContent":{"reasoningText":{"text":"plain"}}}]}},"stopReason":"end_turn"}`), []byte("a"))
	if err != nil || !contains(string(out), `"content":"a\n\nb","reasoning_content":"plain","thinking_blocks":[{"type":"redacted_thinking","data":"UkVE"}]}`) {
		t.Fatalf("%s %v", out, err)
	}

	for _, bad := range []string{`not json`, `[]`, `{"output":{}}`, `{"output":{"message":{"content":[{"toolUse":{"name":"f"}}]}}}`} {
		if _, _, err := ResponseToChat(nil, []byte(bad), []byte("a")); !errors.Is(err, ErrInvalidResponse) {
			t.Errorf("%s: got %v", bad, err)
		}
	}
	// No text: content null; max_tokens → length.
	out, _, err = ResponseToChat(nil, []byte(`{"output":{"message":{"content":[]}},"stopReason":"max_tokens"}`), []byte("a"))
	if err != nil || !contains(string(out), `"content":null},"finish_reason":"length"`) {
		t.Fatalf("%s %v", out, err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
