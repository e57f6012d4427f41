package mock_test

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"gw/perf/mock"
)

func TestBufferedChat(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	for _, path := range []string{"/v1/chat/completions", "/openai/v1/chat/completions", "/chat/completions"} {
		resp := post(t, c, base+path, chatBody)
		body, err := readAll(resp)
		if err != nil {
			t.Fatalf("%s: cannot read body: %s", path, err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s: got status %d; want 200; body %s", path, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: got Content-Type %q; want application/json", path, ct)
		}
		if id := resp.Header.Get("X-Request-Id"); !strings.HasPrefix(id, "req_mock_") {
			t.Fatalf("%s: got X-Request-Id %q; want req_mock_*", path, id)
		}
		var got completion
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: cannot decode %s: %s", path, body, err)
		}
		if !strings.HasPrefix(got.ID, "chatcmpl-") || got.Object != "chat.completion" || got.Created == 0 || got.Model != "gpt-4o" {
			t.Fatalf("%s: unexpected envelope %+v", path, got)
		}
		if len(got.Choices) != 1 {
			t.Fatalf("%s: got %d choices; want 1", path, len(got.Choices))
		}
		ch := got.Choices[0]
		if ch.Message.Role != "assistant" || ch.FinishReason != "stop" || ch.Message.Content == nil {
			t.Fatalf("%s: unexpected choice %+v", path, ch)
		}
		if n := len(*ch.Message.Content); n != mock.DefaultChunks*mock.DefaultChunkSize {
			t.Fatalf("%s: got %d content bytes; want %d", path, n, mock.DefaultChunks*mock.DefaultChunkSize)
		}
		wantUsage := usage{PromptTokens: len(chatBody) / 4, CompletionTokens: mock.DefaultChunks}
		wantUsage.TotalTokens = wantUsage.PromptTokens + wantUsage.CompletionTokens
		if got.Usage != wantUsage {
			t.Fatalf("%s: got usage %+v; want %+v", path, got.Usage, wantUsage)
		}
	}

	// The full shape, nulls included.
	resp := post(t, c, base+"/v1/chat/completions", chatBody)
	body, _ := readAll(resp)
	m := object(t, string(body))
	msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	for _, key := range []string{"refusal", "annotations"} {
		if _, ok := msg[key]; !ok {
			t.Fatalf("message has no %q: %s", key, body)
		}
	}
	for _, key := range []string{"service_tier", "system_fingerprint", "usage"} {
		if _, ok := m[key]; !ok {
			t.Fatalf("completion has no %q: %s", key, body)
		}
	}
}

func TestStreamChat(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body string, includeUsage bool) {
		t.Helper()
		resp := post(t, c, base+"/v1/chat/completions", body, "x-mock-chunks", "4", "x-mock-chunk-size", "5")
		raw, err := readAll(resp)
		if err != nil {
			t.Fatalf("cannot read stream: %s", err)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("got Content-Type %q; want text/event-stream", ct)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
			t.Fatalf("got Cache-Control %q; want no-cache", cc)
		}
		data := sseData(t, raw)
		want := 1 + 4 + 1 + 1 // role, content, finish, [DONE]
		if includeUsage {
			want++
		}
		if len(data) != want {
			t.Fatalf("got %d events; want %d:\n%s", len(data), want, raw)
		}
		if data[len(data)-1] != "[DONE]" {
			t.Fatalf("got last event %q; want [DONE]", data[len(data)-1])
		}
		chunks := data[:len(data)-1]
		first := decodeChunk(t, chunks[0])
		var content strings.Builder
		for i, s := range chunks {
			ch := decodeChunk(t, s)
			if ch.ID != first.ID || ch.Created != first.Created || ch.Model != "gpt-4o" || ch.Object != "chat.completion.chunk" {
				t.Fatalf("chunk %d: envelope %+v differs from the first chunk %+v", i, ch, first)
			}
			_, hasUsage := object(t, s)["usage"]
			if hasUsage != includeUsage {
				t.Fatalf("chunk %d: got usage key %v; want %v: %s", i, hasUsage, includeUsage, s)
			}
			isUsageChunk := includeUsage && i == len(chunks)-1
			switch {
			case i == 0:
				d := ch.Choices[0].Delta
				if d.Role == nil || *d.Role != "assistant" || d.Content == nil || *d.Content != "" || ch.Choices[0].FinishReason != nil {
					t.Fatalf("first chunk is not the role chunk: %s", s)
				}
			case i <= 4:
				d := ch.Choices[0].Delta
				if d.Content == nil || len(*d.Content) != 5 || ch.Choices[0].FinishReason != nil {
					t.Fatalf("chunk %d: want 5 content bytes: %s", i, s)
				}
				content.WriteString(*d.Content)
			case i == 5:
				if fr := ch.Choices[0].FinishReason; fr == nil || *fr != "stop" || ch.Usage != nil {
					t.Fatalf("chunk %d: want finish_reason stop: %s", i, s)
				}
			case isUsageChunk:
				if len(ch.Choices) != 0 || ch.Usage == nil {
					t.Fatalf("usage chunk: want choices [] and usage: %s", s)
				}
				want := usage{PromptTokens: len(body) / 4, CompletionTokens: 4, TotalTokens: len(body)/4 + 4}
				if *ch.Usage != want {
					t.Fatalf("got usage %+v; want %+v", *ch.Usage, want)
				}
				if choices, ok := object(t, s)["choices"].([]any); !ok || len(choices) != 0 {
					t.Fatalf("usage chunk: want \"choices\":[]: %s", s)
				}
			default:
				t.Fatalf("unexpected chunk %d: %s", i, s)
			}
			if !isUsageChunk && ch.Usage != nil {
				t.Fatalf("chunk %d: want usage null: %s", i, s)
			}
		}

		// The buffered answer carries the same content.
		resp = post(t, c, base+"/v1/chat/completions", chatBody, "x-mock-chunks", "4", "x-mock-chunk-size", "5")
		b, _ := readAll(resp)
		var got completion
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("cannot decode %s: %s", b, err)
		}
		if *got.Choices[0].Message.Content != content.String() {
			t.Fatalf("buffered content %q differs from streamed %q", *got.Choices[0].Message.Content, content.String())
		}
	}
	f(streamBody, false)
	f(streamUsageBody, true)
}

// TestStreamMatchesFixtures compares the mock's chunks with recorded OpenAI streams: the
// same keys on every chunk and choice (obfuscation and logprobs aside) and the same event
// sequence.
func TestStreamMatchesFixtures(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	const toolsBody = `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},` +
		`"messages":[{"role":"user","content":"weather and product?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}},` +
		`{"type":"function","function":{"name":"get_product_name"}}]}`
	f := func(fixture, body string, header ...string) {
		t.Helper()
		want, err := os.ReadFile("testdata/" + fixture)
		if err != nil {
			t.Fatalf("cannot read fixture: %s", err)
		}
		resp := post(t, c, base+"/v1/chat/completions", body, header...)
		got, err := readAll(resp)
		if err != nil {
			t.Fatalf("cannot read stream: %s", err)
		}
		wantShape, gotShape := streamShape(t, want), streamShape(t, got)
		if !slices.Equal(gotShape, wantShape) {
			t.Fatalf("stream shape differs from %s\ngot:\n  %s\nwant:\n  %s", fixture,
				strings.Join(gotShape, "\n  "), strings.Join(wantShape, "\n  "))
		}
	}
	f("openai_chat_parallel_tool_calls_include_usage.sse", toolsBody, "x-mock-tool-calls", "2")
	f("openai_chat_text.sse", streamBody)
}

// streamShape describes each event by its keys and kind; runs of the same kind collapse,
// so the number of content chunks or argument fragments does not matter.
func streamShape(t *testing.T, body []byte) []string {
	t.Helper()
	var shape []string
	for _, data := range sseData(t, body) {
		if data == "[DONE]" {
			shape = append(shape, "[DONE]")
			continue
		}
		m := object(t, data)
		delete(m, "obfuscation")
		keys := sortedKeys(m)
		kind := "usage"
		if choices := m["choices"].([]any); len(choices) > 0 {
			choice := choices[0].(map[string]any)
			delete(choice, "logprobs") // gpt-4o sends logprobs:null, gpt-5-nano leaves it out
			delta := choice["delta"].(map[string]any)
			kind = "choice" + strings.Join(sortedKeys(choice), ",") + " delta" + strings.Join(sortedKeys(delta), ",")
			if fr := choice["finish_reason"]; fr != nil {
				kind += " finish=" + fr.(string)
			}
			if delta["role"] != nil {
				kind += " content=" + jsonString(delta["content"])
			}
			if tcs, ok := delta["tool_calls"].([]any); ok {
				tc := tcs[0].(map[string]any)
				kind += " tool_call" + strings.Join(sortedKeys(tc), ",") + " index=" + jsonString(tc["index"]) +
					" function" + strings.Join(sortedKeys(tc["function"].(map[string]any)), ",")
			}
		} else if m["usage"] == nil {
			t.Fatalf("chunk without choices or usage: %s", data)
		}
		ev := strings.Join(keys, ",") + " " + kind
		if len(shape) == 0 || shape[len(shape)-1] != ev {
			shape = append(shape, ev)
		}
	}
	return shape
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestToolCalls(t *testing.T) {
	_, base := startMock(t, mock.Config{Knobs: mock.Knobs{ToolCalls: 2}})
	c := newClient()
	const withTools = `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather"}},{"type":"custom","custom":{"name":"grep"}},` +
		`{"type":"function","function":{"name":"get_time"}}]}`
	buffered := func(body string, header ...string) completion {
		t.Helper()
		resp := post(t, c, base+"/v1/chat/completions", body, header...)
		b, err := readAll(resp)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("got status %d, err %v: %s", resp.StatusCode, err, b)
		}
		var got completion
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("cannot decode %s: %s", b, err)
		}
		return got
	}

	// The server default answers with tool calls only when the request declares tools.
	if got := buffered(chatBody); got.Choices[0].FinishReason != "stop" || len(got.Choices[0].Message.ToolCalls) != 0 {
		t.Fatalf("request without tools: got %+v; want a text answer", got.Choices[0])
	}
	got := buffered(withTools, "x-mock-chunks", "3")
	ch := got.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Content != nil || len(ch.Message.ToolCalls) != 2 {
		t.Fatalf("got %+v; want 2 tool calls, content null, finish_reason tool_calls", ch)
	}
	for i, name := range []string{"get_weather", "grep"} {
		tc := ch.Message.ToolCalls[i]
		if tc.Type != "function" || tc.Function.Name != name || !strings.HasPrefix(tc.ID, "call_") {
			t.Fatalf("tool call %d: got %+v; want function %s", i, tc, name)
		}
		var args map[string]string
		if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
			t.Fatalf("tool call %d: arguments %q are not JSON: %s", i, tc.Function.Arguments, err)
		}
		if len(tc.Function.Arguments) != 3*mock.DefaultChunkSize {
			t.Fatalf("tool call %d: got %d argument bytes; want %d", i, len(tc.Function.Arguments), 3*mock.DefaultChunkSize)
		}
	}
	if ch.Message.ToolCalls[0].ID == ch.Message.ToolCalls[1].ID {
		t.Fatalf("tool call ids are not unique: %q", ch.Message.ToolCalls[0].ID)
	}
	// 2 calls x (1 header + 3 fragments).
	if got.Usage.CompletionTokens != 8 {
		t.Fatalf("got completion_tokens %d; want 8", got.Usage.CompletionTokens)
	}

	// A per-request knob forces tool calls, named mock_tool_<i> without declared tools.
	got = buffered(chatBody, "x-mock-tool-calls", "1")
	if tcs := got.Choices[0].Message.ToolCalls; len(tcs) != 1 || tcs[0].Function.Name != "mock_tool_0" {
		t.Fatalf("got %+v; want one call to mock_tool_0", got.Choices[0])
	}
	// ... and tool_calls=0 turns the default off.
	if got := buffered(withTools, "x-mock-tool-calls", "0"); got.Choices[0].FinishReason != "stop" {
		t.Fatalf("tool_calls=0: got finish_reason %q; want stop", got.Choices[0].FinishReason)
	}

	// Streaming: fragments concatenate per index to the buffered arguments.
	resp := post(t, c, base+"/v1/chat/completions", strings.Replace(withTools, `{`, `{"stream":true,`, 1), "x-mock-chunks", "3")
	raw, err := readAll(resp)
	if err != nil {
		t.Fatalf("cannot read stream: %s", err)
	}
	args := map[int]string{}
	names := map[int]string{}
	var finish string
	for _, data := range sseData(t, raw) {
		if data == "[DONE]" {
			continue
		}
		ch := decodeChunk(t, data)
		if fr := ch.Choices[0].FinishReason; fr != nil {
			finish = *fr
		}
		for _, tc := range ch.Choices[0].Delta.ToolCalls {
			if tc.ID != "" {
				if tc.Function.Arguments == nil || *tc.Function.Arguments != "" || tc.Type != "function" {
					t.Fatalf("tool call header must carry type and arguments \"\": %s", data)
				}
				names[tc.Index] = tc.Function.Name
			}
			args[tc.Index] += *tc.Function.Arguments
		}
	}
	if finish != "tool_calls" || len(args) != 2 || names[0] != "get_weather" || names[1] != "grep" {
		t.Fatalf("got finish %q, names %v, args %v; want 2 tool calls", finish, names, args)
	}
	for i := range 2 {
		if args[i] != ch.Message.ToolCalls[i].Function.Arguments {
			t.Fatalf("streamed arguments %q differ from buffered %q", args[i], ch.Message.ToolCalls[i].Function.Arguments)
		}
	}
}

func TestBadChatRequests(t *testing.T) {
	_, base := startMock(t, mock.Config{})
	c := newClient()
	f := func(body, wantMessage string) {
		t.Helper()
		resp := post(t, c, base+"/v1/chat/completions", body)
		b, _ := readAll(resp)
		if resp.StatusCode != 400 {
			t.Fatalf("%s: got status %d; want 400", body, resp.StatusCode)
		}
		var e openAIError
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: error body %s is not an OpenAI envelope: %s", body, b, err)
		}
		if e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, wantMessage) {
			t.Fatalf("%s: got %+v; want invalid_request_error containing %q", body, e.Error, wantMessage)
		}
	}
	f(`{"model":"gpt-4o","messages":[`, "could not parse the JSON body")
	f(`not json`, "could not parse the JSON body")
	f(`{"model":"gpt-4o","messages":[]} trailing`, "could not parse the JSON body")
	f(`{"messages":[{"role":"user","content":"x"}]}`, "you must provide a model parameter")
	f(`{"model":7,"messages":[{"role":"user","content":"x"}]}`, "you must provide a model parameter")
	f(`{"model":"gpt-4o"}`, "Missing required parameter: 'messages'")
	f(`{"model":"gpt-4o","messages":{}}`, "Invalid type for 'messages'")
	f(`{"model":"gpt-4o","messages":[]}`, "empty array")
}
