package msgconv_test

import (
	"errors"
	"testing"

	"gw/sse/msgconv"
	"gw/sse/transcode"
)

func TestMessagesResponseToChat(t *testing.T) {
	f := func(model, in, want string, wantUsage transcode.Usage) {
		t.Helper()
		out, u, err := msgconv.MessagesResponseToChat([]byte("keep:"), []byte(in), []byte(model))
		if err != nil {
			t.Fatalf("MessagesResponseToChat(%s): %s", in, err)
		}
		sameJSON(t, out[5:], want)
		if u != wantUsage {
			t.Fatalf("usage %+v; want %+v", u, wantUsage)
		}
	}
	// §3.3 example: text + tool_use, cache reads.
	f("alias", `{"id":"msg_01X","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
		"content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_01B","name":"get_weather","input":{"city": "Oslo"}}],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":410,"cache_creation_input_tokens":0,"cache_read_input_tokens":1200,"output_tokens":45,"service_tier":"standard"}}`,
		`{"id":"chatcmpl-msg_01X","object":"chat.completion","created":1700000000,"model":"alias",
		"choices":[{"index":0,"message":{"role":"assistant","content":"Checking.",
			"tool_calls":[{"id":"toolu_01B","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}}]},
		"finish_reason":"tool_calls","logprobs":null}],
		"usage":{"prompt_tokens":1610,"completion_tokens":45,"total_tokens":1655,"prompt_tokens_details":{"cached_tokens":1200}}}`,
		transcode.Usage{Prompt: 1610, Completion: 45, Total: 1655, Cached: 1200})
	// Thinking then two text blocks; cache creation; upstream model kept.
	f("", `{"id":"msg_2","type":"message","model":"claude-x","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"redacted_thinking","data":"x"},
		{"type":"text","text":"a"},{"type":"text","text":"b"}],"stop_reason":"end_turn",
		"usage":{"input_tokens":5,"cache_creation_input_tokens":7,"cache_read_input_tokens":0,"output_tokens":3,"output_tokens_details":{"thinking_tokens":2}}}`,
		`{"id":"chatcmpl-msg_2","object":"chat.completion","created":1700000000,"model":"claude-x",
		"choices":[{"index":0,"message":{"role":"assistant","content":"ab","reasoning_content":"hm",
			"thinking_blocks":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"redacted_thinking","data":"x"}]},"finish_reason":"stop","logprobs":null}],
		"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":7},
		"completion_tokens_details":{"reasoning_tokens":2}}}`,
		transcode.Usage{Prompt: 12, Completion: 3, Total: 15, CacheCreation: 7, Reasoning: 2})
	// §4.7 stop reasons; no text → content null.
	for _, c := range [][2]string{{"end_turn", "stop"}, {"stop_sequence", "stop"}, {"max_tokens", "length"},
		{"tool_use", "tool_calls"}, {"refusal", "content_filter"}, {"pause_turn", "stop"}, {"model_context_window_exceeded", "length"}} {
		f("m", `{"id":"msg_3","content":[],"stop_reason":"`+c[0]+`","usage":{"input_tokens":1,"output_tokens":1}}`,
			`{"id":"chatcmpl-msg_3","object":"chat.completion","created":1700000000,"model":"m",
			"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"`+c[1]+`","logprobs":null}],
			"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}`,
			transcode.Usage{Prompt: 1, Completion: 1, Total: 2})
	}

	// Errors.
	_, _, err := msgconv.MessagesResponseToChat(nil, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"r"}`), nil)
	var ue *msgconv.UpstreamError
	if !errors.As(err, &ue) || ue.Code != transcode.CodeOverloaded || ue.Message != "Overloaded" {
		t.Fatalf("error envelope: %v", err)
	}
	for _, in := range []string{`{`, `[]`, `{"id":"x"}`, `{"content":[1]}`, `{"content":[{"type":"tool_use","name":1}]}`} {
		out, _, err := msgconv.MessagesResponseToChat([]byte("k"), []byte(in), nil)
		if !errors.Is(err, msgconv.ErrInvalidResponse) || string(out) != "k" {
			t.Fatalf("%s: %q, %v", in, out, err)
		}
	}
}

func TestChatResponseToMessages(t *testing.T) {
	f := func(model, in, want string, wantUsage transcode.Usage) {
		t.Helper()
		out, u, err := msgconv.ChatResponseToMessages([]byte("keep:"), []byte(in), []byte(model))
		if err != nil {
			t.Fatalf("ChatResponseToMessages(%s): %s", in, err)
		}
		sameJSON(t, out[5:], want)
		if u != wantUsage {
			t.Fatalf("usage %+v; want %+v", u, wantUsage)
		}
	}
	// §1.2 example: tool calls, usage with cached tokens.
	f("alias", `{"id":"chatcmpl-9x","object":"chat.completion","created":1755137933,"model":"gpt-4o-2024-08-06",
		"choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,
		"message":{"role":"assistant","content":null,"refusal":null,"annotations":[],
		"tool_calls":[{"id":"call_b2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
		              {"id":"call_c3","type":"function","function":{"name":"now","arguments":""}},
		              {"id":"call_d4","type":"function","function":{"name":"bad","arguments":"{oops"}}]}}],
		"usage":{"prompt_tokens":80,"completion_tokens":18,"total_tokens":98,"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0},
		"completion_tokens_details":{"reasoning_tokens":5}},"service_tier":"default","system_fingerprint":"fp_x"}`,
		`{"id":"msg_9x","type":"message","role":"assistant","model":"alias","content":[
		{"type":"tool_use","id":"call_b2","name":"get_weather","input":{"city":"Oslo"}},
		{"type":"tool_use","id":"call_c3","name":"now","input":{}},
		{"type":"tool_use","id":"call_d4","name":"bad","input":{"_raw":"{oops"}}],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":16,"cache_creation_input_tokens":0,"cache_read_input_tokens":64,"output_tokens":18}}`,
		transcode.Usage{Prompt: 80, Completion: 18, Total: 98, Cached: 64, Reasoning: 5})
	// Text with reasoning; refusal; §4.7 reverse stop reasons.
	f("", `{"id":"c1","model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi","reasoning_content":"think"},"finish_reason":"stop"}]}`,
		`{"id":"msg_c1","type":"message","role":"assistant","model":"gpt-x","content":[
		{"type":"thinking","thinking":"think","signature":""},{"type":"text","text":"Hi"}],
		"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`,
		transcode.Usage{})
	for _, c := range [][2]string{{"stop", "end_turn"}, {"length", "max_tokens"}, {"tool_calls", "tool_use"}, {"function_call", "tool_use"}, {"content_filter", "refusal"}} {
		f("m", `{"id":"chatcmpl-2","choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":"no"},"finish_reason":"`+c[0]+`"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`,
			`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"no"}],
			"stop_reason":"`+c[1]+`","stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}`,
			transcode.Usage{Prompt: 3, Completion: 1, Total: 4})
	}

	_, _, err := msgconv.ChatResponseToMessages(nil, []byte(`{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`), nil)
	var ue *msgconv.UpstreamError
	if !errors.As(err, &ue) || ue.Code != transcode.CodeInsufficientQuota {
		t.Fatalf("error body: %v", err)
	}
	for _, in := range []string{`{`, `1`, `{"choices":[]}`, `{"choices":[{"message":1}]}`} {
		out, _, err := msgconv.ChatResponseToMessages([]byte("k"), []byte(in), nil)
		if !errors.Is(err, msgconv.ErrInvalidResponse) || string(out) != "k" {
			t.Fatalf("%s: %q, %v", in, out, err)
		}
	}
}
