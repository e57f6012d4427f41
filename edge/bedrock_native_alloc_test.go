//go:build !race

package edge

import (
	"encoding/base64"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/sse/eventstream"
)

// invokeFrames is an InvokeModelWithResponseStream answer of n text deltas:
// Messages events base64-encoded in event-stream chunk frames.
func invokeFrames(n int) [][]byte {
	ev := func(data string) []byte {
		return eventstream.AppendMessage(nil, []eventstream.Header{
			{Name: ":event-type", Value: "chunk"}, {Name: ":content-type", Value: "application/json"}, {Name: ":message-type", Value: "event"},
		}, []byte(`{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(data))+`","p":"abcdefgh"}`))
	}
	f := [][]byte{
		ev(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-3-7-sonnet-20250219","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`),
		ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	}
	for i := 0; i < n; i++ {
		f = append(f, ev(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok`+strconv.Itoa(i)+` "}}`))
	}
	return append(f, ev(`{"type":"content_block_stop","index":0}`),
		ev(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":`+strconv.Itoa(n)+`}}`),
		ev(`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":5,"outputTokenCount":`+strconv.Itoa(n)+`,"invocationLatency":9,"firstByteLatency":2}}`))
}

func bedrockClaudeProxy(tb testing.TB, base string) *Proxy {
	tb.Helper()
	env := map[string]string{"BR": `{"access_key_id":"AKID","secret_access_key":"s","region":"us-east-1"}`, "CALLER": "caller-key", "BASE": base}
	src := `_format_version: "1"
provider_keys:
  - {display_name: br, adapter: bedrock, api_key: "${BR}", api_base: "${BASE}"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: claude, provider: bedrock, model_name: us.anthropic.claude-3-7-sonnet-20250219-v1:0, provider_key: br, stream_timeout: 30000}
`
	h := &snapshot.Holder{}
	h.Store(compileFile(tb, src, env))
	return &Proxy{Holder: h}
}

var nativeMessagesBody = []byte(`{"model":"claude","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)

func relayMessagesOnce(t testing.TB, p *Proxy, w io.Writer) {
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/messages")
	ctx.Request.Header.Set("x-api-key", "caller-key")
	ctx.Request.Header.Set("anthropic-version", "2023-06-01")
	ctx.Request.SetBody(nativeMessagesBody)
	if !p.Handle(ctx) || ctx.Response.StatusCode() != 200 || !ctx.Response.IsBodyStream() {
		t.Fatalf("stream not committed: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	if _, err := ctx.Response.BodyStream().(io.WriterTo).WriteTo(w); err != nil {
		t.Fatal(err)
	}
	ctx.Response.ResetBody()
}

// TestBedrockNativeRelayAllocsPerEvent: a Messages caller on Claude on
// Bedrock is relayed natively (chunk frames decoded, Messages events passed
// on with the alias as model) at 0 allocations per relayed event.
func TestBedrockNativeRelayAllocsPerEvent(t *testing.T) {
	perStream := func(events int) float64 {
		p := bedrockClaudeProxy(t, startRawUpstream(t, writeBurst, invokeFrames(events)))
		var w countingWriter
		w.buf.Grow(64 << 10)
		relayMessagesOnce(t, p, &w)
		s := w.buf.String()
		if got := strings.Count(s, `"text_delta","text":"tok`); got != events || !strings.HasPrefix(s, "event: message_start\n") ||
			!strings.Contains(s, `"model":"claude"`) || !strings.HasSuffix(s, "}}\n\n") || !strings.Contains(s, "event: message_stop\n") {
			t.Fatalf("relayed %d text deltas; want %d:\n%s", got, events, s)
		}
		for i := 0; i < 20; i++ {
			w.buf.Reset()
			relayMessagesOnce(t, p, &w)
		}
		return testing.AllocsPerRun(200, func() {
			w.buf.Reset()
			relayMessagesOnce(t, p, &w)
		})
	}
	short, long := perStream(20), perStream(200)
	if perEvent := (long - short) / 180; perEvent > 0.02 {
		t.Fatalf("a 20-event stream allocates %.1f, a 200-event one %.1f: %.3f per event; want 0", short, long, perEvent)
	}
	t.Logf("allocations per stream: %.1f (20 events), %.1f (200 events)", short, long)
}
