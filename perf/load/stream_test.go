package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"gw/sse"
)

func TestDeltaHasContent(t *testing.T) {
	f := func(data string, want bool) {
		t.Helper()
		if got := deltaHasContent([]byte(data)); got != want {
			t.Fatalf("deltaHasContent(%s) = %v; want %v", data, got, want)
		}
	}
	f(`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`, true)
	f(`{"choices":[{"delta":{"content":"\n"}}]}`, true)
	f(`{"choices":[{"delta":{"content":"\"x"}}]}`, true)
	f(` { "choices" : [ { "delta" : { "content" : "a" } } ] } `, true)
	// The token is in the second choice.
	f(`{"choices":[{"index":0,"delta":{"content":""}},{"index":1,"delta":{"content":"x"}}]}`, true)
	// The role chunk, the finish chunk, a usage chunk: no token.
	f(`{"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}`, false)
	f(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, false)
	f(`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5}}`, false)
	f(`{"choices":[{"delta":{"content":null}}]}`, false)
	f(`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q"}}]}}]}`, false)
	// "content" outside choices[].delta, or inside a string, does not count.
	f(`{"content":"x","choices":[{"delta":{}}]}`, false)
	f(`{"choices":[{"message":{"content":"x"}}]}`, false)
	f(`{"choices":[{"delta":{"refusal":"\"content\":\"x\""}}]}`, false)
	// Not a chunk at all.
	f(`[DONE]`, false)
	f(``, false)
	f(`{"choices":[{"delta":{"content":"x"`, false)
	f(`{"choices":{"delta":{"content":"x"}}}`, false)
}

// stepClock is a concurrency-unsafe clock that advances 1 ms at every now.
type stepClock struct{ t time.Duration }

func (c *stepClock) now() time.Duration {
	c.t += time.Millisecond
	return c.t
}

func (c *stepClock) sleep(context.Context, time.Duration) bool { return true }

func TestReadEvents(t *testing.T) {
	f := func(name string, classify func([]byte) eventKind, body []byte, wantEvents, wantChunks int64, wantToken time.Duration, wantDone bool) {
		t.Helper()
		r := sse.AcquireReader(bytes.NewReader(body))
		defer sse.ReleaseReader(r)
		clk := &stepClock{}
		smp := sample{token: -1}
		gaps, err := readEvents(r, clk, classify, &smp, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if smp.events != wantEvents || smp.chunks != wantChunks || smp.token != wantToken || smp.sawDone != wantDone {
			t.Fatalf("%s: got events %d, chunks %d, token %s, done %v; want %d, %d, %s, %v", name,
				smp.events, smp.chunks, smp.token, smp.sawDone, wantEvents, wantChunks, wantToken, wantDone)
		}
		if want := max(wantEvents-1, 0); int64(len(gaps)) != want {
			t.Fatalf("%s: got %d gaps; want %d", name, len(gaps), want)
		}
		for _, g := range gaps {
			if g != 1000 {
				t.Fatalf("%s: gaps %v; want 1000 µs each", name, gaps)
			}
		}
	}
	capture := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ms := time.Millisecond
	// Real captures. The clock ticks once per event: the token time is the position of the
	// first content event, from 1. The terminator is not an event.
	// OpenAI chat: a role chunk, 48 content chunks, a finish chunk, [DONE].
	f("chat capture", classifyChat, capture("../mock/testdata/openai_chat_text.sse"), 50, 48, 2*ms, true)
	f("chat no token", classifyChat, []byte("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: [DONE]\n\n"), 1, 0, -1, true)
	f("chat no done", classifyChat, []byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n: keep-alive\n\n"), 1, 1, ms, false)
	f("chat empty", classifyChat, nil, 0, 0, -1, false)
	// Anthropic: message_start, content_block_start, ping, 1 text delta, content_block_stop,
	// message_delta, message_stop.
	f("messages capture", classifyMessages, capture("../../sse/testdata/anthropic_text.sse"), 6, 1, 4*ms, true)
	// 19 thinking events before the first text delta; thinking_delta is no content.
	f("messages thinking", classifyMessages, capture("../../sse/testdata/anthropic_thinking_then_text.sse"), 117, 95, 21*ms, true)
	// Text, then parallel tool_use blocks whose input_json_delta is no content.
	f("messages tool use", classifyMessages, capture("../../sse/testdata/anthropic_text_then_parallel_tool_use.sse"), 20, 9, 4*ms, true)
	// A mid-stream error event: no message_stop.
	f("messages error", classifyMessages, []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"+
		"\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":"+
		"{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"), 2, 1, ms, false)
	// Responses: created, in_progress, output_item.added, content_part.added, 2 text deltas,
	// output_text.done, content_part.done, output_item.done, completed.
	f("responses capture", classifyResponses, capture("../../sse/testdata/openai_responses_text.sse"), 9, 2, 5*ms, true)
	// Reasoning summary and function-call argument deltas are no content.
	f("responses function call", classifyResponses, capture("../../sse/testdata/openai_responses_reasoning_then_function_call.sse"),
		13, 0, -1, true)
}

func TestClassify(t *testing.T) {
	f := func(classify func([]byte) eventKind, data string, want eventKind) {
		t.Helper()
		if got := classify([]byte(data)); got != want {
			t.Fatalf("classify(%s) = %d; want %d", data, got, want)
		}
	}
	f(classifyChat, `[DONE]`, evEnd)
	f(classifyChat, `{"choices":[{"delta":{"content":"a"}}]}`, evContent)
	f(classifyChat, `{"choices":[{"delta":{"role":"assistant","content":""}}]}`, evOther)

	m := classifyMessages
	f(m, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, evContent)
	f(m, ` { "delta" : { "text" : "\n" } , "type" : "content_block_delta" } `, evContent)
	f(m, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`, evOther)
	f(m, `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"text\":\"x\""}}`, evOther)
	f(m, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`, evOther)
	f(m, `{"type":"content_block_delta","delta":{"text":null}}`, evOther)
	f(m, `{"type":"content_block_delta","delta":"text"}`, evOther)
	f(m, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"x"}}`, evOther)
	f(m, `{"type":"message_delta","delta":{"stop_reason":"end_turn","text":"x"}}`, evOther)
	f(m, `{"type":"message_stop"}`, evEnd)
	f(m, `{"type":"ping"}`, evOther)
	f(m, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, evOther)
	f(m, `[DONE]`, evOther)
	f(m, `{"type":"content_block_delta","delta":{"text":"x"`, evOther)
	f(m, ``, evOther)

	r := classifyResponses
	f(r, `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}`, evContent)
	f(r, `{"type":"response.output_text.delta","delta":""}`, evOther)
	f(r, `{"type":"response.output_text.delta","delta":null}`, evOther)
	f(r, `{"type":"response.function_call_arguments.delta","delta":"{\"q"}`, evOther)
	f(r, `{"type":"response.reasoning_summary_text.delta","delta":"hmm"}`, evOther)
	f(r, `{"type":"response.output_text.done","text":"Hi"}`, evOther)
	f(r, `{"type":"response.completed","response":{"status":"completed"}}`, evEnd)
	f(r, `{"type":"response.failed","response":{"status":"failed"}}`, evOther)
	f(r, `{"type":"response.output_text.delta","delta":"x"`, evOther)
	f(r, `[DONE]`, evOther)
}

func TestReadEventsError(t *testing.T) {
	cut := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"cho"),
		iotestErrReader{cut})
	r := sse.AcquireReader(src)
	defer sse.ReleaseReader(r)
	smp := sample{token: -1}
	_, err := readEvents(r, &stepClock{}, classifyChat, &smp, nil)
	if !errors.Is(err, cut) || smp.chunks != 1 {
		t.Fatalf("got err %v, chunks %d; want %v, 1", err, smp.chunks, cut)
	}
}

type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }

// FuzzDeltaHasContent checks deltaHasContent against encoding/json on valid input and
// that it never panics on any input.
func FuzzDeltaHasContent(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"refusal":"\"content\":\"x\""}}]}`))
	f.Add([]byte(`{"choices":[],"usage":null}`))
	f.Add([]byte(`[DONE]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := deltaHasContent(data)
		want, ok := refDeltaHasContent(data)
		if !ok {
			return
		}
		// The fast path skips keys spelled with \u escapes, which no provider sends.
		if want && !bytes.Contains(data, strContentKey) {
			return
		}
		if got != want {
			t.Fatalf("deltaHasContent(%s) = %v; encoding/json says %v", data, got, want)
		}
	})
}

// refDeltaHasContent is deltaHasContent with encoding/json; ok is false for invalid JSON.
// Maps keep keys exact (struct fields would match case-insensitively) and let the last
// duplicate win, as rawjson does.
func refDeltaHasContent(data []byte) (want, ok bool) {
	if !json.Valid(data) {
		return false, false
	}
	var top map[string]json.RawMessage
	var choices []json.RawMessage
	if json.Unmarshal(data, &top) != nil || json.Unmarshal(top["choices"], &choices) != nil {
		return false, true
	}
	for _, c := range choices {
		var choice, delta map[string]json.RawMessage
		var content string
		if json.Unmarshal(c, &choice) != nil || json.Unmarshal(choice["delta"], &delta) != nil {
			continue
		}
		raw := bytes.TrimSpace(delta["content"])
		if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &content) == nil && content != "" {
			return true, true
		}
	}
	return false, true
}
