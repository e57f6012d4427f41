//go:build !race

package msgconv_test

import (
	"testing"

	"gw/sse/msgconv"
	"gw/sse/transcode"
)

// TestStreamAllocs: after warm-up a whole stream, End included, allocates
// nothing (the events are pre-parsed so that only the transcoder counts).
func TestStreamAllocs(t *testing.T) {
	f := func(s transcode.Stream, name string) {
		t.Helper()
		evs := parseSSE(t, readFixture(t, name), nil)
		names, datas := make([][]byte, len(evs)), make([][]byte, len(evs))
		for i, ev := range evs {
			names[i], datas[i] = []byte(ev.Name), []byte(ev.Data)
		}
		model := []byte("my-alias")
		dst := make([]byte, 0, 64<<10)
		run := func() {
			s.Reset(model)
			out := dst[:0]
			for i := range datas {
				var err error
				if out, err = s.Event(out, names[i], datas[i]); err != nil {
					t.Fatalf("%s: %s", name, err)
				}
			}
			out = s.End(out)
			if len(out) == 0 {
				t.Fatalf("no output")
			}
		}
		run()
		if n := testing.AllocsPerRun(100, run); n != 0 {
			t.Fatalf("%s: got %v allocs per stream; want 0", name, n)
		}
	}
	m2c := msgconv.AcquireMessagesToChatStream(nil)
	defer msgconv.ReleaseMessagesToChatStream(m2c)
	for _, name := range []string{"anthropic_text.sse", "anthropic_text_then_parallel_tool_use.sse",
		"anthropic_thinking_then_text.sse", "anthropic_tool_use_json.jsonl"} {
		f(m2c, name)
	}
	c2m := msgconv.AcquireChatToMessagesStream(nil)
	defer msgconv.ReleaseChatToMessagesStream(c2m)
	for _, name := range []string{"openai_chat_text.sse", "openai_chat_include_usage_finish_length.sse",
		"openai_chat_parallel_tool_calls_include_usage.sse", "azure_openai_chat_text_content_filter.sse"} {
		f(c2m, name)
	}
}

// TestFailAllocs: the in-band failure frames allocate nothing either.
func TestFailAllocs(t *testing.T) {
	m2c := msgconv.AcquireMessagesToChatStream(nil)
	c2m := msgconv.AcquireChatToMessagesStream(nil)
	dst := make([]byte, 0, 4096)
	model := []byte("m")
	run := func() {
		m2c.Reset(model)
		c2m.Reset(model)
		_ = m2c.Fail(dst[:0], transcode.CodeOverloaded, "upstream overloaded")
		_ = c2m.Fail(dst[:0], transcode.CodeOverloaded, "upstream overloaded")
		m2c.Reset(model)
		c2m.Reset(model)
		_ = m2c.Reject(dst[:0], "content_filter", "blocked")
		_ = c2m.Reject(dst[:0], "content_filter", "blocked")
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("got %v allocs; want 0", n)
	}
}

// TestRequestAllocs: request conversions reuse pooled scratch; with a
// large enough dst they allocate nothing after warm-up.
func TestRequestAllocs(t *testing.T) {
	dst, dst2 := make([]byte, 0, 64<<10), make([]byte, 0, 64<<10)
	opt := msgconv.RequestOptions{UpstreamModel: "claude", AutoCache: msgconv.AutoCache5m}
	run := func() {
		out, err := msgconv.ChatRequestToMessages(dst[:0], benchChatRequest, opt)
		if err != nil || len(out) == 0 {
			t.Fatalf("%v", err)
		}
		out, err = msgconv.MessagesRequestToChat(dst2[:0], out, opt)
		if err != nil || len(out) == 0 {
			t.Fatalf("%v", err)
		}
	}
	run()
	// sync.Pool may drop its value at a GC; allow for that.
	if n := testing.AllocsPerRun(100, run); n > 0.1 {
		t.Fatalf("got %v allocs; want 0", n)
	}
}

// TestThinkingBlocksAllocs: chat chunks carrying thinking_blocks (an
// Anthropic thinking stream converted to chat) become signature_delta
// events without allocating.
func TestThinkingBlocksAllocs(t *testing.T) {
	m2c := msgconv.AcquireMessagesToChatStream([]byte("m"))
	chat := runStream(t, m2c, "m", readFixture(t, "anthropic_thinking_then_text.sse"), nil)
	msgconv.ReleaseMessagesToChatStream(m2c)
	evs := parseSSE(t, chat, nil)
	datas := make([][]byte, len(evs))
	for i, ev := range evs {
		datas[i] = []byte(ev.Data)
	}
	c2m := msgconv.AcquireChatToMessagesStream(nil)
	defer msgconv.ReleaseChatToMessagesStream(c2m)
	dst := make([]byte, 0, 64<<10)
	model := []byte("m")
	run := func() {
		c2m.Reset(model)
		out := dst[:0]
		for _, d := range datas {
			out, _ = c2m.Event(out, nil, d)
		}
		if out = c2m.End(out); !bytesContains(out, "signature_delta") {
			t.Fatalf("no signature_delta in\n%s", out)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("got %v allocs per stream; want 0", n)
	}
}

func bytesContains(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}
