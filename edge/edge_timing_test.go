package edge

import (
	"gw/edge/authn"
	"gw/sse"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
)

const benchFile = `_format_version: "1"
provider_keys:
  - display_name: oa
    api_key: ${K}
    api_base: http://127.0.0.1:9/v1
api_keys:
  - display_name: caller
    key_env: CALLER
    allowed_models: ["*"]
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o-2024-08-06
    provider_key: oa
`

func benchSnapshot(tb testing.TB) *snapshot.Snapshot {
	return compileFile(tb, benchFile, map[string]string{"K": "sk-upstream", "CALLER": "caller-key"})
}

// compileFile loads and compiles a resource file for edge tests, with a real
// upstream pool.
func compileFile(tb testing.TB, src string, env map[string]string) *snapshot.Snapshot {
	tb.Helper()
	r := resources.Load([]byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err := r.Err(); err != nil {
		tb.Fatal(err)
	}
	opt := snapshot.DefaultOptions()
	opt.Pool = upstream.NewPool(upstream.Options{})
	s, err := snapshot.Compile(r.Resources, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// A realistic ~2 KB chat body.
var benchBody = []byte(`{"model":"gpt","messages":[{"role":"system","content":"You are a helpful assistant that answers briefly and precisely, citing sources when possible."},` +
	`{"role":"user","content":"Summarise the following text in three bullet points: Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat."},` +
	`{"role":"assistant","content":"Sure. Which format do you prefer for the bullet points?"},{"role":"user","content":"Plain dashes, no markdown headers, and keep each bullet under twenty words please."}],` +
	`"temperature":0.3,"max_tokens":256,"stream":true,"tools":[{"type":"function","function":{"name":"lookup","description":"Look up a fact","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}]}`)

// BenchmarkRequestHotPath is the per-request work inside gw before the
// upstream call: auth (SHA-256 lookup), body scan (validation, model, stream,
// roles), alias lookup and grant check, and building the upstream request
// (model rewrite, forced include_usage, headers).
func BenchmarkRequestHotPath(b *testing.B) {
	snap := benchSnapshot(b)
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody(benchBody)
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	now := time.Now()
	for b.Loop() {
		c := acquireCall()
		c.caller, _ = authn.Authenticate(&ctx.Request.Header, snap, now)
		if c.caller == nil {
			b.Fatal("auth")
		}
		if bad, err := scanChatRequest(ctx.Request.Body(), &c.cr); err != nil || bad >= 0 {
			b.Fatal("scan")
		}
		c.plan = snap.Plans[string(c.cr.Model)]
		if c.plan == nil || !c.caller.Allowed(c.plan) {
			b.Fatal("plan")
		}
		c.in.Body = ctx.Request.Body()
		c.in.Stream = c.cr.Stream
		c.in.ForceUsage = true
		c.in.UpstreamModel = c.plan.UpstreamModel
		c.in.Shape = c.cr.shape(c.in.Body)
		fillVars(&c.in.Vars, c.caller.Key, c.plan.Alias)
		req := fasthttp.AcquireRequest()
		if err := c.plan.Upstream.Adapter.BuildChat(req, &c.in); err != nil {
			b.Fatal(err)
		}
		fasthttp.ReleaseRequest(req)
		releaseCall(c)
	}
}

var benchChunk = []byte(`{"id":"chatcmpl-AbCdEf0123456789","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_50cad350e4","choices":[{"index":0,"delta":{"content":" Hello"},"logprobs":null,"finish_reason":null}],"usage":null}`)

// BenchmarkRelayChunk is the per-chunk work of a relayed stream: the usage
// check, removing the forced `usage:null`, and the model rewrite into the
// outgoing SSE event.
func BenchmarkRelayChunk(b *testing.B) {
	snap := benchSnapshot(b)
	c := &call{plan: snap.Plans["gpt"]}
	c.in.ForceUsage = true
	s := relayPool.Get().(*relayState)
	b.SetBytes(int64(len(benchChunk)))
	b.ReportAllocs()
	for b.Loop() {
		if !s.processChunk(c, benchChunk) {
			b.Fatal("dropped")
		}
	}
}

// BenchmarkRelayChunkCallerUsage is the same chunk when the caller asked for
// usage itself (no field removal).
func BenchmarkRelayChunkCallerUsage(b *testing.B) {
	snap := benchSnapshot(b)
	c := &call{plan: snap.Plans["gpt"]}
	s := relayPool.Get().(*relayState)
	b.SetBytes(int64(len(benchChunk)))
	b.ReportAllocs()
	for b.Loop() {
		s.processChunk(c, benchChunk)
	}
}

// BenchmarkNativeEvent is the per-event work of a native stream (the
// upstream speaks the caller's format): event classification, usage, and
// the model rewrite of the events that carry it.
func BenchmarkNativeEvent(b *testing.B) {
	snap := benchSnapshot(b)
	c := &call{plan: snap.Plans["gpt"]}
	s := relayPool.Get().(*relayState)
	for _, e := range nativeBenchEvents {
		b.Run(e.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.read(s, c, e.ev)
			}
		})
	}
}

// nativeBenchEvents are typical events of native streams.
var nativeBenchEvents = []struct {
	name string
	read func(*relayState, *call, sse.Event) evFlags
	ev   sse.Event
}{
	{"messages text delta", messagesEvent, sse.Event{Name: []byte("content_block_delta"),
		Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" Hello"}}`)}},
	{"messages message_start", messagesEvent, sse.Event{Name: []byte("message_start"),
		Data: []byte(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`)}},
	{"responses text delta", responsesEvent, sse.Event{Name: []byte("response.output_text.delta"),
		Data: []byte(`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_01","output_index":0,"content_index":0,"delta":" Hello","logprobs":[]}`)}},
	{"responses completed", responsesEvent, sse.Event{Name: []byte("response.completed"),
		Data: []byte(`{"type":"response.completed","sequence_number":9,"response":{"id":"resp_01","object":"response","created_at":1731000000,"status":"completed","model":"gpt-5","output":[],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":17}}}`)}},
}
