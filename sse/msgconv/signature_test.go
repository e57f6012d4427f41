package msgconv_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"gw/sse/msgconv"
)

// thinkingOf returns the thinking and redacted_thinking blocks of an
// Anthropic stream as "thinking:<text>:<signature>" / "redacted:<data>",
// checking the grammar on the way (assembleMessages).
func thinkingOf(t *testing.T, stream []byte) []string {
	t.Helper()
	assembleMessages(t, stream)
	var out []string
	var cur *strings.Builder
	var sig string
	for _, ev := range parseSSE(t, stream, nil) {
		var e struct {
			Type         string
			ContentBlock map[string]any `json:"content_block"`
			Delta        map[string]any
		}
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case "content_block_start":
			switch e.ContentBlock["type"] {
			case "thinking":
				cur, sig = new(strings.Builder), ""
			case "redacted_thinking":
				out = append(out, "redacted:"+e.ContentBlock["data"].(string))
			}
		case "content_block_delta":
			switch e.Delta["type"] {
			case "thinking_delta":
				cur.WriteString(e.Delta["thinking"].(string))
			case "signature_delta":
				sig += e.Delta["signature"].(string)
			}
		case "content_block_stop":
			if cur != nil {
				out = append(out, "thinking:"+cur.String()+":"+sig)
				cur = nil
			}
		}
	}
	return out
}

// TestSignatureThroughChat: an Anthropic thinking stream converted to chat
// (MessagesToChatStream) and back to Messages (ChatToMessagesStream) keeps
// each thinking block's text and signature, at random split points.
func TestSignatureThroughChat(t *testing.T) {
	fx := readFixture(t, "anthropic_thinking_then_text.sse")
	want := thinkingOf(t, fx)
	if len(want) == 0 || strings.HasSuffix(want[0], ":") {
		t.Fatalf("the fixture has no signed thinking block: %v", want)
	}
	rng := rand.New(rand.NewPCG(7, 18))
	for range 20 {
		m2c := msgconv.AcquireMessagesToChatStream([]byte("m"))
		chat := runStream(t, m2c, "m", fx, randomSizes(rng))
		msgconv.ReleaseMessagesToChatStream(m2c)
		c2m := msgconv.AcquireChatToMessagesStream([]byte("m"))
		back := runStream(t, c2m, "m", chat, randomSizes(rng))
		msgconv.ReleaseChatToMessagesStream(c2m)
		if got := thinkingOf(t, back); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("thinking blocks\n got %q\nwant %q\n%s", got, want, back)
		}
	}
}

func TestChatToMessagesThinkingBlocks(t *testing.T) {
	s := msgconv.AcquireChatToMessagesStream([]byte("m"))
	defer msgconv.ReleaseChatToMessagesStream(s)
	cases := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"converse reasoning then signature", []string{
			chunk(`{"role":"assistant","reasoning_content":"Let me "}`),
			chunk(`{"reasoning_content":"think."}`),
			chunk(`{"thinking_blocks":[{"type":"thinking","thinking":"","signature":"c2ln"}]}`),
			chunk(`{"content":"Hi."}`), finishChunk("stop"),
		}, []string{"thinking:Let me think.:c2ln"}},
		{"signature with text and no open block", []string{
			chunk(`{"content":"a"}`),
			chunk(`{"thinking_blocks":[{"type":"thinking","thinking":"t\"q","signature":"s1"},{"type":"redacted_thinking","data":"b3BhcXVl"}]}`),
			chunk(`{"reasoning_content":"again"}`), finishChunk("stop"),
		}, []string{"thinking:t\"q:s1", "redacted:b3BhcXVl", "thinking:again:"}},
		{"unsigned text is kept, malformed elements are dropped", []string{
			chunk(`{"reasoning_content":"r"}`),
			chunk(`{"thinking_blocks":[{"type":"thinking","thinking":"x"},{"type":"redacted_thinking"},{"type":"other"},3]}`),
			finishChunk("stop"),
		}, []string{"thinking:rx:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := c2m(t, s, tc.chunks...)
			if got := thinkingOf(t, []byte(out)); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q\nwant %q\n%s", got, tc.want, out)
			}
		})
	}
}

func TestChatResponseToMessagesThinkingBlocks(t *testing.T) {
	cases := []struct{ name, msg, want string }{
		{"signed blocks replace reasoning_content",
			`{"role":"assistant","content":"Hi.","reasoning_content":"hm","thinking_blocks":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"ZGF0YQ=="}]}`,
			`[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"ZGF0YQ=="},{"type":"text","text":"Hi."}]`},
		{"redacted only keeps the unsigned reasoning",
			`{"role":"assistant","content":"Hi.","reasoning_content":"hm","thinking_blocks":[{"type":"redacted_thinking","data":"ZA=="}]}`,
			`[{"type":"thinking","thinking":"hm","signature":""},{"type":"redacted_thinking","data":"ZA=="},{"type":"text","text":"Hi."}]`},
		{"no blocks",
			`{"role":"assistant","content":"Hi.","reasoning_content":"hm"}`,
			`[{"type":"thinking","thinking":"hm","signature":""},{"type":"text","text":"Hi."}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"id":"chatcmpl-1","model":"x","choices":[{"index":0,"message":` + tc.msg + `,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`
			out, _, err := msgconv.ChatResponseToMessages(nil, []byte(body), []byte("m"))
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, mustJSON(t, decode(t, out).(map[string]any)["content"]), tc.want)
		})
	}
}
