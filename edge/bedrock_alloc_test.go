//go:build !race

package edge

import (
	"strconv"
	"strings"
	"testing"

	"gw/admin/snapshot"
	"gw/sse/eventstream"
)

// converseFrames is a ConverseStream of n text deltas in the binary
// event-stream framing.
func converseFrames(n int) [][]byte {
	ev := func(typ, payload string) []byte {
		return eventstream.AppendMessage(nil, []eventstream.Header{
			{Name: ":event-type", Value: typ}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "event"},
		}, []byte(payload))
	}
	f := [][]byte{ev("messageStart", `{"p":"abc","role":"assistant"}`)}
	for i := 0; i < n; i++ {
		f = append(f, ev("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"tok`+strconv.Itoa(i)+` "},"p":"abcdef"}`))
	}
	return append(f, ev("contentBlockStop", `{"contentBlockIndex":0}`), ev("messageStop", `{"stopReason":"end_turn"}`),
		ev("metadata", `{"usage":{"inputTokens":5,"outputTokens":`+strconv.Itoa(n)+`,"totalTokens":`+strconv.Itoa(n+5)+`},"metrics":{"latencyMs":1}}`))
}

func bedrockProxy(tb testing.TB, base string) *Proxy {
	tb.Helper()
	env := map[string]string{"BR": `{"access_key_id":"AKID","secret_access_key":"s","region":"us-east-1"}`, "CALLER": "caller-key", "BASE": base}
	src := `_format_version: "1"
provider_keys:
  - {display_name: br, adapter: bedrock, api_key: "${BR}", api_base: "${BASE}"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: bedrock, model_name: us.amazon.nova-micro-v1:0, provider_key: br, stream_timeout: 30000}
`
	h := &snapshot.Holder{}
	h.Store(compileFile(tb, src, env))
	return &Proxy{Holder: h}
}

// TestBedrockRelayAllocsPerEvent is TestRelayAllocsPerEvent for a Bedrock
// upstream: event-stream decoding and Converse → chat conversion included,
// 0 allocations per relayed event.
func TestBedrockRelayAllocsPerEvent(t *testing.T) {
	perStream := func(events int) float64 {
		p := bedrockProxy(t, startRawUpstream(t, writeBurst, converseFrames(events)))
		var w countingWriter
		w.buf.Grow(64 << 10)
		relayOnce(t, p, &w)
		if got := strings.Count(w.buf.String(), `"delta":{"content":"tok`); got != events || !strings.HasSuffix(w.buf.String(), "data: [DONE]\n\n") {
			t.Fatalf("relayed %d text chunks; want %d:\n%s", got, events, w.buf.String())
		}
		for i := 0; i < 20; i++ { // warm the pools
			w.buf.Reset()
			relayOnce(t, p, &w)
		}
		return testing.AllocsPerRun(200, func() {
			w.buf.Reset()
			relayOnce(t, p, &w)
		})
	}
	short, long := perStream(20), perStream(200)
	if perEvent := (long - short) / 180; perEvent > 0.02 {
		t.Fatalf("a 20-event stream allocates %.1f, a 200-event one %.1f: %.3f per event; want 0", short, long, perEvent)
	}
	t.Logf("allocations per stream: %.1f (20 events), %.1f (200 events)", short, long)
}
