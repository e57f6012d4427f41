package msgconv_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gw/sse/msgconv"
	"gw/sse/transcode"
)

// chatSource is what a chat stream holds, read leniently (as a reference for
// the fixtures, which carry vendor fields).
type chatSource struct {
	Content string
	Tools   []chatTool
	Finish  string
	Usage   transcode.Usage
}

func readChatSource(tb testing.TB, stream []byte) chatSource {
	tb.Helper()
	var src chatSource
	for _, ev := range parseSSE(tb, stream, nil) {
		if ev.Data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content   *string
					ToolCalls []struct {
						Index    int
						ID       string
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				PromptTokens        int64 `json:"prompt_tokens"`
				CompletionTokens    int64 `json:"completion_tokens"`
				TotalTokens         int64 `json:"total_tokens"`
				PromptTokensDetails struct {
					CachedTokens int64 `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
				CompletionTokensDetails struct {
					ReasoningTokens int64 `json:"reasoning_tokens"`
				} `json:"completion_tokens_details"`
			}
		}
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
			tb.Fatalf("bad fixture chunk %s: %s", ev.Data, err)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				src.Content += *ch.Delta.Content
			}
			for _, tc := range ch.Delta.ToolCalls {
				for len(src.Tools) <= tc.Index {
					src.Tools = append(src.Tools, chatTool{})
				}
				t := &src.Tools[tc.Index]
				if tc.ID != "" {
					t.ID, t.Name = tc.ID, tc.Function.Name
				}
				t.Args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				src.Finish = *ch.FinishReason
			}
		}
		if u := c.Usage; u != nil {
			src.Usage = transcode.Usage{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Total: u.TotalTokens,
				Cached: u.PromptTokensDetails.CachedTokens, Reasoning: u.CompletionTokensDetails.ReasoningTokens}
		}
	}
	return src
}

func TestChatToMessagesStreamFixtures(t *testing.T) {
	f := func(name string, wantUsage bool) {
		t.Helper()
		stream := readFixture(t, name)
		src := readChatSource(t, stream)
		s := msgconv.AcquireChatToMessagesStream(nil)
		defer msgconv.ReleaseChatToMessagesStream(s)
		whole := runStream(t, s, "my-alias", stream, nil)
		rng := rand.New(rand.NewPCG(2, uint64(len(stream))))
		for range 60 {
			out := runStream(t, s, "my-alias", stream, randomSizes(rng))
			if string(out) != string(whole) {
				t.Fatalf("%s: output depends on the read sizes", name)
			}
		}
		res := assembleMessages(t, whole)
		if !res.Stopped || res.Error != nil || res.Model != "my-alias" || !strings.HasPrefix(res.ID, "msg_") {
			t.Fatalf("%s: got %+v", name, res)
		}
		var text string
		var tools []msgBlock
		for _, b := range res.Blocks {
			text += b.Text
			if b.Type == "tool_use" {
				tools = append(tools, b)
			}
		}
		if text != src.Content {
			t.Fatalf("%s: text %q; want %q", name, text, src.Content)
		}
		if len(tools) != len(src.Tools) {
			t.Fatalf("%s: %d tools; want %d", name, len(tools), len(src.Tools))
		}
		for k, tb := range tools {
			if tb.ID != src.Tools[k].ID || tb.Name != src.Tools[k].Name {
				t.Fatalf("%s: tool %d is %s %s; want %+v", name, k, tb.ID, tb.Name, src.Tools[k])
			}
			sameArgs(t, tb.JSONText, src.Tools[k].Args)
		}
		if want := msgconv.StopReason([]byte(src.Finish)); res.Stop != want {
			t.Fatalf("%s: stop %q; want %q", name, res.Stop, want)
		}
		u, ok := s.Usage()
		if ok != wantUsage || u != src.Usage {
			t.Fatalf("%s: Usage() = %+v, %v; want %+v", name, u, ok, src.Usage)
		}
		want := fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":%d,"output_tokens":%d}`,
			src.Usage.Prompt-src.Usage.Cached, src.Usage.Cached, src.Usage.Completion)
		sameJSON(t, mustJSON(t, res.Usage), want)
	}
	f("openai_chat_text.sse", false)
	f("openai_chat_include_usage_finish_length.sse", true)
	f("openai_chat_parallel_tool_calls_include_usage.sse", true)
	f("azure_openai_chat_text_content_filter.sse", false)
}

func TestChatToMessagesStreamGolden(t *testing.T) {
	s := msgconv.NewChatToMessagesStream()
	out := runStream(t, s, "gpt", []byte(
		`data: {"id":"chatcmpl-X1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`+"\n\n"+
			`data: {"id":"chatcmpl-X1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}`+"\n\n"+
			`data: {"id":"chatcmpl-X1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}`+"\n\n"+
			`data: {"id":"chatcmpl-X1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]},"finish_reason":null}]}`+"\n\n"+
			`data: {"id":"chatcmpl-X1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`+"\n\n"+
			`data: {"id":"chatcmpl-X1","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55,"prompt_tokens_details":{"cached_tokens":40}}}`+"\n\n"+
			"data: [DONE]\n\n"), nil)
	want := "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_X1","type":"message","role":"assistant","model":"gpt","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_1","name":"f","input":{}}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":1}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":40,"output_tokens":5}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

// c2m feeds chat chunks (data only) and returns the output with End.
func c2m(t *testing.T, s *msgconv.ChatToMessagesStream, chunks ...string) string {
	t.Helper()
	s.Reset([]byte("m"))
	var out []byte
	for _, c := range chunks {
		var err error
		if out, err = s.Event(out, nil, []byte(c)); err != nil {
			t.Fatalf("Event(%s): %s", c, err)
		}
	}
	return string(s.End(out))
}

func chunk(delta string) string {
	return `{"id":"chatcmpl-1","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
}

func finishChunk(reason string) string {
	return `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

func TestChatToMessagesStreamEvents(t *testing.T) {
	s := msgconv.AcquireChatToMessagesStream([]byte("m"))
	defer msgconv.ReleaseChatToMessagesStream(s)

	// Finish reasons, and the stream ending without [DONE].
	for _, c := range [][2]string{
		{"stop", "end_turn"}, {"length", "max_tokens"}, {"tool_calls", "tool_use"},
		{"function_call", "tool_use"}, {"content_filter", "refusal"}, {"new_reason", "end_turn"},
	} {
		res := assembleMessages(t, []byte(c2m(t, s, chunk(`{"content":"x"}`), finishChunk(c[0]))))
		if res.Stop != c[1] || !res.Stopped || res.Blocks[0].Text != "x" {
			t.Fatalf("%s: got %+v", c[0], res)
		}
	}

	// Reasoning (reasoning_content or reasoning) then text, refusal text,
	// parallel tool calls, one with whole arguments in its first fragment.
	out := c2m(t, s,
		chunk(`{"role":"assistant","content":null}`),
		chunk(`{"reasoning_content":"let me"}`),
		chunk(`{"reasoning":" think"}`),
		chunk(`{"content":"Answer"}`),
		chunk(`{"refusal":"; no"}`),
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"a","arguments":"{\"q\":"}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"\\u00e9\\\"}\"}"}}]}`),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"b","arguments":"{}"}}]}`),
		finishChunk("tool_calls"),
		"[DONE]")
	res := assembleMessages(t, []byte(out))
	types := ""
	for _, b := range res.Blocks {
		types += b.Type + " "
	}
	if types != "thinking text tool_use tool_use " || res.Blocks[0].Thinking != "let me think" ||
		res.Blocks[1].Text != "Answer; no" || res.Stop != "tool_use" {
		t.Fatalf("got %+v", res)
	}
	sameArgs(t, res.Blocks[2].JSONText, `{"q":"é\"}"}`)
	sameArgs(t, res.Blocks[3].JSONText, `{}`)
	if res.Blocks[2].ID != "call_a" || res.Blocks[3].Name != "b" {
		t.Fatalf("got %+v", res.Blocks)
	}
	if _, ok := s.Usage(); ok {
		t.Fatalf("usage without a usage chunk")
	}

	// Interleaved fragments: call 1 starts while call 0's arguments are
	// incomplete; it is replayed after call 0 completes.
	out = c2m(t, s,
		chunk(`{"tool_calls":[{"index":0,"id":"c0","function":{"name":"x","arguments":"{\"a\":"}}]}`),
		chunk(`{"tool_calls":[{"index":1,"id":"c1","function":{"name":"y","arguments":"{\"b\""}}]}`),
		chunk(`{"tool_calls":[{"index":2,"id":"c2","function":{"name":"z","arguments":""}}]}`),
		chunk(`{"tool_calls":[{"index":1,"function":{"arguments":":2}"}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"}{\"}"}}]}`),
		chunk(`{"tool_calls":[{"index":2,"function":{"arguments":"{\"c\":[3]"}}]}`),
		chunk(`{"tool_calls":[{"index":2,"function":{"arguments":"}"}}]}`),
		finishChunk("tool_calls"))
	res = assembleMessages(t, []byte(out))
	if len(res.Blocks) != 3 {
		t.Fatalf("got %+v", res)
	}
	for k, want := range []string{`{"a":"}{"}`, `{"b":2}`, `{"c":[3]}`} {
		sameArgs(t, res.Blocks[k].JSONText, want)
		if res.Blocks[k].ID != fmt.Sprint("c", k) {
			t.Fatalf("block %d: %+v", k, res.Blocks[k])
		}
	}

	// A queued call whose leader never completes is flushed at the finish.
	out = c2m(t, s,
		chunk(`{"tool_calls":[{"index":0,"id":"c0","function":{"name":"x","arguments":"{\"a\":"}}]}`),
		chunk(`{"tool_calls":[{"index":1,"id":"c1","function":{"name":"y","arguments":"{}"}}]}`))
	res = assembleMessages(t, []byte(out))
	if len(res.Blocks) != 2 || res.Blocks[1].JSONText != "{}" || res.Stop != "tool_use" {
		t.Fatalf("got %+v", res)
	}

	// Usage with cache reads and writes, before the finish chunk; a tool
	// call without an id gets one.
	out = c2m(t, s,
		chunk(`{"tool_calls":[{"function":{"name":"x","arguments":"{}"}}]}`),
		`{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":60,"cache_write_tokens":30},"completion_tokens_details":{"reasoning_tokens":4}}}`,
		finishChunk("tool_calls"), "[DONE]")
	res = assembleMessages(t, []byte(out))
	sameJSON(t, mustJSON(t, res.Usage), `{"input_tokens":10,"cache_creation_input_tokens":30,"cache_read_input_tokens":60,"output_tokens":20}`)
	u, ok := s.Usage()
	if want := (transcode.Usage{Prompt: 100, Completion: 20, Total: 120, Cached: 60, CacheCreation: 30, Reasoning: 4}); !ok || u != want {
		t.Fatalf("Usage() = %+v; want %+v", u, want)
	}
	if !strings.HasPrefix(res.Blocks[0].ID, "toolu_gw") {
		t.Fatalf("tool id %q", res.Blocks[0].ID)
	}

	// Choices other than 0, choices null, chunks without choices or usage,
	// unknown fields, whitespace.
	out = c2m(t, s,
		`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[]}`,
		`{"id":"chatcmpl-9","choices":null}`,
		` { "id" : "chatcmpl-9" , "choices" : [ { "index" : 1 , "delta" : { "content" : "other" } } , { "index" : 0 , "delta" : { "content" : "mine" } , "x" : 1 } ] } `,
		`{"id":"chatcmpl-9","choices":[{"index":0,"delta":{"content":""},"finish_reason":null,"logprobs":null}],"obfuscation":"abc"}`)
	res = assembleMessages(t, []byte(out))
	if res.ID != "msg_9" || len(res.Blocks) != 1 || res.Blocks[0].Text != "mine" || res.Stop != "end_turn" {
		t.Fatalf("got %+v\n%s", res, out)
	}

	// Backends that omit the index: a new id is a new call, fragments
	// without one continue the last call.
	out = c2m(t, s,
		chunk(`{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\""}}]}`),
		chunk(`{"tool_calls":[{"function":{"arguments":":1}"}}]}`),
		chunk(`{"tool_calls":[{"id":"a","function":{"arguments":""}}]}`),
		chunk(`{"tool_calls":[{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}`),
		finishChunk("tool_calls"))
	res = assembleMessages(t, []byte(out))
	if len(res.Blocks) != 2 || res.Blocks[0].ID != "a" || res.Blocks[1].ID != "b" || res.Blocks[1].Name != "g" {
		t.Fatalf("got %+v", res)
	}
	sameArgs(t, res.Blocks[0].JSONText, `{"x":1}`)

	// No chunks at all: a well-formed, empty message, never started.
	res = assembleMessages(t, []byte(c2m(t, s)))
	if !res.Stopped || len(res.Blocks) != 0 || !strings.HasPrefix(res.ID, "msg_gw") || s.Started() {
		t.Fatalf("got %+v", res)
	}
	res = assembleMessages(t, []byte(c2m(t, s, chunk(`{"role":"assistant","content":""}`), finishChunk("stop"), "[DONE]")))
	if !res.Stopped || len(res.Blocks) != 0 || s.Started() {
		t.Fatalf("empty content: %+v, started %v", res, s.Started())
	}
}

func TestChatToMessagesStreamErrors(t *testing.T) {
	s := msgconv.AcquireChatToMessagesStream([]byte("m"))
	defer msgconv.ReleaseChatToMessagesStream(s)

	// An upstream error chunk mid-stream.
	f := func(errObj, wantType string) {
		t.Helper()
		s.Reset([]byte("m"))
		out, _ := s.Event(nil, nil, []byte(chunk(`{"content":"par"}`)))
		out, err := s.Event(out, nil, []byte(`{"error":`+errObj+`}`))
		if err != nil {
			t.Fatal(err)
		}
		out, _ = s.Event(out, nil, []byte(chunk(`{"content":"ignored"}`)))
		out = s.End(out)
		out = s.Fail(out, transcode.CodeServerError, "again")
		res := assembleMessages(t, out)
		if res.Error == nil || res.Error["type"] != wantType || res.Stopped || res.Blocks[0].Text != "par" {
			t.Fatalf("%s: got %+v\n%s", errObj, res, out)
		}
		if s.Err() == nil {
			t.Fatalf("no Err()")
		}
	}
	f(`{"message":"m","type":"server_error","param":null,"code":null}`, "api_error")
	f(`{"message":"m","type":"server_error","code":"server_is_overloaded"}`, "overloaded_error")
	f(`{"message":"m","type":"requests","code":"rate_limit_exceeded"}`, "rate_limit_error")
	f(`{"message":"m","type":"invalid_request_error","code":"context_length_exceeded"}`, "invalid_request_error")
	f(`{"message":"m","type":"insufficient_quota","code":"insufficient_quota"}`, "billing_error")
	f(`{"message":"m"}`, "api_error")
	f(`{}`, "api_error")

	// Fail maps the codes; other codes are rejections (spec errors 4).
	g := func(code, wantType string, wantCode any) {
		t.Helper()
		s.Reset([]byte("m"))
		out, _ := s.Event(nil, nil, []byte(chunk(`{"content":"x"}`)))
		out = s.Fail(out, code, "bad \"thing\"")
		out = s.End(out)
		res := assembleMessages(t, out)
		if res.Error == nil || res.Error["type"] != wantType || res.Error["code"] != wantCode || res.Error["message"] != `bad "thing"` || res.Stopped {
			t.Fatalf("%s: got %+v", code, res)
		}
	}
	g(transcode.CodeOverloaded, "overloaded_error", nil)
	g(transcode.CodeRateLimit, "rate_limit_error", nil)
	g(transcode.CodeSlowDown, "rate_limit_error", nil)
	g(transcode.CodeTimeout, "timeout_error", nil)
	g(transcode.CodeContextLength, "invalid_request_error", nil)
	g(transcode.CodeInvalidPrompt, "invalid_request_error", nil)
	g(transcode.CodeInsufficientQuota, "billing_error", nil)
	g(transcode.CodeServerError, "api_error", nil)
	g(transcode.CodeUpstreamStreamFail, "api_error", nil)
	g("content_filter", "invalid_request_error", "content_filter")
	g("guardrail_unavailable", "invalid_request_error", "guardrail_unavailable")

	s.Reset([]byte("m"))
	out := s.Reject(nil, "content_filter", "blocked")
	res := assembleMessages(t, out)
	if res.Error["type"] != "invalid_request_error" || res.Error["code"] != "content_filter" {
		t.Fatalf("got %+v", res)
	}

	// Malformed chunks: an error, nothing appended.
	s.Reset([]byte("m"))
	for _, data := range []string{`{"choices":[`, `[]`, `nul`, `{"a":1}x`} {
		out, err := s.Event([]byte("p"), nil, []byte(data))
		if !errors.Is(err, msgconv.ErrMalformedEvent) || string(out) != "p" {
			t.Fatalf("%s: got %q, %v", data, out, err)
		}
	}
	if s.Started() {
		t.Fatalf("started without content")
	}
}

// TestMessageStartInputUsage: message_start reports the estimate while the
// upstream has not reported usage, the exact counts when the first chunk
// carries them; message_delta always has the exact counts.
func TestMessageStartInputUsage(t *testing.T) {
	first := `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}`
	last := `{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":100}}}`
	withUsage := `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":{"prompt_tokens":33,"completion_tokens":1}}`
	cases := []struct {
		name       string
		chunks     []string
		start, end string
	}{
		{"estimate then exact", []string{first, last, "[DONE]"},
			`"usage":{"input_tokens":250,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`,
			`"usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":7}}`},
		{"usage in the first chunk", []string{withUsage, "[DONE]"},
			`"usage":{"input_tokens":33,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`,
			`"usage":{"input_tokens":33,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := msgconv.AcquireChatToMessagesStream([]byte("m"))
			defer msgconv.ReleaseChatToMessagesStream(s)
			s.SetInputEstimate(250)
			var out []byte
			for _, ch := range c.chunks {
				var err error
				if out, err = s.Event(out, nil, []byte(ch)); err != nil {
					t.Fatal(err)
				}
			}
			evs := strings.Split(string(out), "\n\n")
			if !strings.HasPrefix(evs[0], "event: message_start") || !strings.HasSuffix(evs[0], c.start) {
				t.Fatalf("message_start %s; want suffix %s", evs[0], c.start)
			}
			if !strings.Contains(string(out), c.end) {
				t.Fatalf("message_delta lacks %s: %s", c.end, out)
			}
		})
	}
}
