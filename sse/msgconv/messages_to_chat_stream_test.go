package msgconv_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gw/sse"
	"gw/sse/msgconv"
	"gw/sse/transcode"
)

func TestMessagesToChatStreamFixtures(t *testing.T) {
	f := func(name string, wantUsage transcode.Usage) {
		t.Helper()
		stream := readFixture(t, name)
		src := assembleMessages(t, stream)
		var text, thinking string
		var tools []msgBlock
		for _, b := range src.Blocks {
			text += b.Text
			thinking += b.Thinking
			if b.Type == "tool_use" {
				tools = append(tools, b)
			}
		}
		s := msgconv.AcquireMessagesToChatStream(nil)
		defer msgconv.ReleaseMessagesToChatStream(s)
		whole := runStream(t, s, "my-alias", stream, nil)
		rng := rand.New(rand.NewPCG(1, uint64(len(stream))))
		for i := range 60 {
			var sizes []int
			if i > 0 {
				sizes = randomSizes(rng)
			}
			out := runStream(t, s, "my-alias", stream, sizes)
			if string(out) != string(whole) {
				t.Fatalf("%s: output depends on the read sizes %v", name, sizes)
			}
		}
		res := assembleChat(t, whole)
		if !res.Done || res.Error != nil || res.Role != "assistant" {
			t.Fatalf("%s: done %v, error %v, role %q", name, res.Done, res.Error, res.Role)
		}
		if res.Content != text {
			t.Fatalf("%s: content %q; want %q", name, res.Content, text)
		}
		if res.Reasoning != thinking {
			t.Fatalf("%s: reasoning %q; want %q", name, res.Reasoning, thinking)
		}
		if len(res.Tools) != len(tools) {
			t.Fatalf("%s: %d tool calls; want %d", name, len(res.Tools), len(tools))
		}
		for k, tc := range res.Tools {
			if tc.ID != tools[k].ID || tc.Name != tools[k].Name {
				t.Fatalf("%s: tool %d is %s %s; want %s %s", name, k, tc.ID, tc.Name, tools[k].ID, tools[k].Name)
			}
			sameArgs(t, tc.Args, tools[k].JSONText)
		}
		if want := msgconv.FinishReason([]byte(src.Stop)); res.Finish != want {
			t.Fatalf("%s: finish %q; want %q", name, res.Finish, want)
		}
		if res.AfterUsage != 0 {
			t.Fatalf("%s: %d chunks after the usage chunk", name, res.AfterUsage)
		}
		wantJSON := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0}}`,
			wantUsage.Prompt, wantUsage.Completion, wantUsage.Total)
		sameJSON(t, mustJSON(t, res.Usage), wantJSON)
		u, ok := s.Usage()
		if !ok || u != wantUsage {
			t.Fatalf("%s: Usage() = %+v, %v; want %+v", name, u, ok, wantUsage)
		}
		if !s.Started() {
			t.Fatalf("%s: not started", name)
		}
	}
	f("anthropic_text.sse", transcode.Usage{Prompt: 20, Completion: 5, Total: 25})
	f("anthropic_text_then_parallel_tool_use.sse", transcode.Usage{Prompt: 310, Completion: 82, Total: 392})
	f("anthropic_thinking_then_text.sse", transcode.Usage{Prompt: 43, Completion: 282, Total: 325})
	f("anthropic_tool_use_json.jsonl", transcode.Usage{Prompt: 849, Completion: 47, Total: 896})
}

// TestMessagesToChatStreamGolden pins the exact frames for the smallest
// recorded stream.
func TestMessagesToChatStreamGolden(t *testing.T) {
	s := msgconv.NewMessagesToChatStream()
	out := runStream(t, s, "claude", readFixture(t, "anthropic_text.sse"), nil)
	const p = `data: {"id":"chatcmpl-msg_018E1hg8GoVTGEKQY3ovMcSJ","object":"chat.completion.chunk","created":1700000000,"model":"claude","choices":[`
	want := p + `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
		p + `{"index":0,"delta":{"content":"2"},"finish_reason":null}]}` + "\n\n" +
		p + `{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		p + `],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":0}}}` + "\n\n" +
		"data: [DONE]\n\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

// m2c feeds hand-written events (name, data pairs) and returns the output.
func m2c(t *testing.T, s *msgconv.MessagesToChatStream, end bool, evs ...string) string {
	t.Helper()
	s.Reset([]byte("m"))
	var out []byte
	for i := 0; i+1 < len(evs); i += 2 {
		var err error
		if out, err = s.Event(out, []byte(evs[i]), []byte(evs[i+1])); err != nil {
			t.Fatalf("Event(%s): %s", evs[i+1], err)
		}
	}
	if end {
		out = s.End(out)
	}
	return string(out)
}

const (
	evStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":100,"output_tokens":1}}}`
	evText0 = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	evStop0 = `{"type":"content_block_stop","index":0}`
)

func TestMessagesToChatStreamEvents(t *testing.T) {
	s := msgconv.AcquireMessagesToChatStream([]byte("m"))
	defer msgconv.ReleaseMessagesToChatStream(s)

	// Usage with cache read and creation; stop reasons.
	f := func(stop, finish string) {
		t.Helper()
		out := m2c(t, s, true,
			"message_start", evStart,
			"content_block_start", evText0,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"\n\u00e9"}}`,
			"content_block_stop", evStop0,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":7}}`,
			"message_stop", `{"type":"message_stop"}`)
		res := assembleChat(t, []byte(out))
		if res.Content != "a\"\né" || res.Finish != finish || !res.Done {
			t.Fatalf("stop %s: got %+v", stop, res)
		}
		sameJSON(t, mustJSON(t, res.Usage), `{"prompt_tokens":113,"completion_tokens":7,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":100,"cache_write_tokens":3}}`)
		u, _ := s.Usage()
		if want := (transcode.Usage{Prompt: 113, Completion: 7, Total: 120, Cached: 100, CacheCreation: 3}); u != want {
			t.Fatalf("usage %+v; want %+v", u, want)
		}
	}
	f("end_turn", "stop")
	f("stop_sequence", "stop")
	f("pause_turn", "stop")
	f("max_tokens", "length")
	f("model_context_window_exceeded", "length")
	f("tool_use", "tool_calls")
	f("refusal", "content_filter")
	f("something_new", "stop")

	// Unnamed events (JSON type only), whitespace padding, unknown events
	// and fields, ping with odd spacing, a redacted thinking block.
	out := m2c(t, s, true,
		"", evStart,
		"ping", `{"type": "ping"}`,
		"", `{ "type" : "content_block_start" , "index" : 0 , "content_block" : { "type" : "redacted_thinking" , "data" : "xx" }   }`,
		"", `{"type":"content_block_stop","index":0      }`,
		"future_event", `{"type":"future_event","x":[1,2,{"y":null}]}`,
		"", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"","citations":[]},"extra":true}`,
		"", `{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{}}}`,
		"", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}   }`,
		"", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":""}}`,
		"", `{"type":"content_block_stop","index":1}`,
		"", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2,"output_tokens_details":{"thinking_tokens":1}}}`,
		"", `{"type":"message_stop"}`)
	res := assembleChat(t, []byte(out))
	if res.Content != "ok" || res.Reasoning != "" || res.Finish != "stop" || res.Frames != 6 ||
		len(res.Blocks) != 1 || res.Blocks[0] != "redacted:xx" {
		t.Fatalf("got %+v\n%s", res, out)
	}
	sameJSON(t, mustJSON(t, res.Usage), `{"prompt_tokens":113,"completion_tokens":2,"total_tokens":115,"prompt_tokens_details":{"cached_tokens":100,"cache_write_tokens":3},"completion_tokens_details":{"reasoning_tokens":1}}`)

	// Thinking then parallel tools, one without arguments, one with.
	out = m2c(t, s, true,
		"message_start", evStart,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`,
		"content_block_stop", evStop0,
		"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"f","input":{}}}`,
		"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
		"content_block_stop", `{"type":"content_block_stop","index":1}`,
		"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"g","input":{}}}`,
		"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"x\": "}}`,
		"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"[1]}"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":2}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`,
		"message_stop", `{"type":"message_stop"}`)
	res = assembleChat(t, []byte(out))
	want := []chatTool{{"toolu_a", "f", "{}"}, {"toolu_b", "g", `{"x": [1]}`}}
	if res.Reasoning != "hmm" || res.Finish != "tool_calls" || fmt.Sprint(res.Tools) != fmt.Sprint(want) {
		t.Fatalf("got %+v", res)
	}

	// A tool_use whose input arrives whole in the start event.
	out = m2c(t, s, true,
		"", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{"a":1}}}`,
		"", `{"type":"content_block_stop","index":0}`)
	res = assembleChat(t, []byte(out))
	if len(res.Tools) != 1 || res.Tools[0].Args != `{"a":1}` || res.Finish != "tool_calls" || res.Role != "assistant" {
		t.Fatalf("got %+v", res)
	}
	if !strings.Contains(out, `"id":"chatcmpl-msg_gw`) {
		t.Fatalf("no generated id: %s", out)
	}
}

func TestMessagesToChatStreamErrors(t *testing.T) {
	s := msgconv.AcquireMessagesToChatStream([]byte("m"))
	defer msgconv.ReleaseMessagesToChatStream(s)

	f := func(errType, msg, wantType, wantCode string) {
		t.Helper()
		out := m2c(t, s, false,
			"message_start", evStart,
			"content_block_start", evText0,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"par"}}`,
			"error", `{"type":"error","error":{"type":"`+errType+`","message":"`+msg+`"}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ignored"}}`)
		out += string(s.End(nil))
		out += string(s.Fail(nil, transcode.CodeServerError, "again"))
		res := assembleChat(t, []byte(out))
		if res.Done || res.Content != "par" || res.Error == nil {
			t.Fatalf("%s: got %+v\n%s", errType, res, out)
		}
		got := fmt.Sprint(res.Error["type"], " ", res.Error["code"], " ", res.Error["message"])
		if want := wantType + " " + wantCode + " " + msg; got != want {
			t.Fatalf("error %q; want %q", got, want)
		}
		var ue *msgconv.UpstreamError
		if !errors.As(s.Err(), &ue) || ue.Type != errType || ue.Code != wantCode {
			t.Fatalf("Err() = %v", s.Err())
		}
	}
	f("overloaded_error", "Overloaded", "server_error", transcode.CodeOverloaded)
	f("rate_limit_error", "slow", "rate_limit_error", transcode.CodeRateLimit)
	f("api_error", "boom", "server_error", transcode.CodeServerError)
	f("timeout_error", "late", "server_error", transcode.CodeTimeout)
	f("billing_error", "pay", "insufficient_quota", transcode.CodeInsufficientQuota)
	f("invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum", "invalid_request_error", transcode.CodeContextLength)
	f("invalid_request_error", "bad", "invalid_request_error", transcode.CodeInvalidPrompt)
	f("permission_error", "no", "server_error", transcode.CodeUpstreamStreamFail)

	// Fail and Reject after content: an error frame, no [DONE].
	g := func(fail func(dst []byte) []byte, wantType, wantCode string) {
		t.Helper()
		out := m2c(t, s, false, "message_start", evStart)
		out = string(fail([]byte(out)))
		out += string(s.End(nil))
		res := assembleChat(t, []byte(out))
		if res.Done || res.Error == nil || res.Error["type"] != wantType || res.Error["code"] != wantCode || res.Error["message"] != "msg \"q\"" {
			t.Fatalf("got %+v", res)
		}
		if s.Err() != nil {
			t.Fatalf("Err() = %v after Fail", s.Err())
		}
	}
	for _, c := range [][2]string{
		{transcode.CodeServerError, "server_error"}, {transcode.CodeTimeout, "server_error"},
		{transcode.CodeOverloaded, "server_error"}, {transcode.CodeRateLimit, "rate_limit_error"},
		{transcode.CodeSlowDown, "rate_limit_error"}, {transcode.CodeContextLength, "invalid_request_error"},
		{transcode.CodeInvalidPrompt, "invalid_request_error"}, {transcode.CodeInsufficientQuota, "insufficient_quota"},
		{transcode.CodeUpstreamStreamFail, "server_error"}, {"content_filter", "invalid_request_error"},
	} {
		g(func(dst []byte) []byte { return s.Fail(dst, c[0], `msg "q"`) }, c[1], c[0])
	}
	g(func(dst []byte) []byte { return s.Reject(dst, "content_filter", `msg "q"`) }, "invalid_request_error", "content_filter")

	// Malformed data: an error, nothing appended, the stream goes on.
	s.Reset([]byte("m"))
	for _, data := range []string{`{"type":`, `[1]`, `"x"`, `{"type":"content_block_delta"`} {
		out, err := s.Event([]byte("prefix"), []byte("content_block_delta"), []byte(data))
		if !errors.Is(err, msgconv.ErrMalformedEvent) || string(out) != "prefix" {
			t.Fatalf("%s: got %q, %v", data, out, err)
		}
	}
	if out, err := s.Event(nil, []byte("ping"), nil); err != nil || len(out) != 0 {
		t.Fatalf("empty ping: %q, %v", out, err)
	}
	if s.Started() {
		t.Fatalf("started without content")
	}
	// Invalid string values never leak into the output.
	out := m2c(t, s, true,
		"", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad\u00"}}`,
		"", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ctl`+"\x01\n"+`"}}`,
		"", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\xff\"}}",
		"", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}`)
	res := assembleChat(t, []byte(out))
	if res.Content != "\ufffd" || !res.Done {
		t.Fatalf("got %+v\n%q", res, out)
	}
	for _, ev := range parseSSE(t, []byte(out), nil) {
		if ev.Data != "[DONE]" && !validJSON(ev.Data) {
			t.Fatalf("invalid frame %q", ev.Data)
		}
	}
}

func TestMessagesToChatStreamEmpty(t *testing.T) {
	// No events at all: End still writes a well-formed stream.
	s := msgconv.NewMessagesToChatStream()
	s.Reset([]byte("m"))
	out := s.End(nil)
	res := assembleChat(t, out)
	if !res.Done || res.Finish != "stop" || res.Role != "assistant" {
		t.Fatalf("got %+v", res)
	}
	if _, ok := s.Usage(); ok || s.Started() {
		t.Fatalf("usage reported without any, or started")
	}
	if out := s.End(nil); len(out) != 0 {
		t.Fatalf("second End wrote %q", out)
	}
	// The framing is what sse.AppendData would write.
	if !strings.HasSuffix(string(out), string(sse.AppendDone(nil))) {
		t.Fatalf("no [DONE]")
	}
}
