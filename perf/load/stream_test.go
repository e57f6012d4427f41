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
	// A real OpenAI capture: a role chunk, 48 content chunks, a finish chunk, [DONE].
	capture, err := os.ReadFile("../mock/testdata/openai_chat_text.sse")
	if err != nil {
		t.Fatal(err)
	}
	f := func(name string, body []byte, wantEvents, wantChunks int64, wantToken time.Duration, wantDone bool) {
		t.Helper()
		r := sse.AcquireReader(bytes.NewReader(body))
		defer sse.ReleaseReader(r)
		clk := &stepClock{}
		smp := sample{token: -1}
		gaps, err := readEvents(r, clk, &smp, nil)
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
	// The clock ticks once per event: the first content chunk is the second event.
	f("capture", capture, 50, 48, 2*time.Millisecond, true)
	f("no token", []byte("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: [DONE]\n\n"), 1, 0, -1, true)
	f("no done", []byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n: keep-alive\n\n"), 1, 1, time.Millisecond, false)
	f("empty", nil, 0, 0, -1, false)
}

func TestReadEventsError(t *testing.T) {
	cut := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"cho"),
		iotestErrReader{cut})
	r := sse.AcquireReader(src)
	defer sse.ReleaseReader(r)
	smp := sample{token: -1}
	_, err := readEvents(r, &stepClock{}, &smp, nil)
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
