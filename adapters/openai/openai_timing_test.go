package openai

import (
	"testing"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
	"gw/sse/rawjson"
)

// chatBody2K is a realistic ~2 KB streaming chat body: a developer prompt,
// a few turns with a tool call, a tool definition.
var chatBody2K = []byte(`{"model":"team-default","stream":true,"temperature":1.4,"max_tokens":1024,` +
	`"messages":[` +
	`{"role":"developer","content":"You are a concise assistant for an engineering team. Answer in short paragraphs, cite the files you rely on, and never invent APIs that are not in the provided context. When unsure, say so and suggest how to verify."},` +
	`{"role":"user","content":[{"type":"text","text":"We see intermittent 502s from the gateway when the upstream closes idle keep-alive connections. "},{"type":"text","text":"What should the client do?"}]},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function","function":{"name":"search_code","arguments":"{\"query\":\"MaxIdleConnDuration\",\"repo\":\"gw\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_a1","content":"adapters/upstream/pool.go:42: MaxIdleConnDuration time.Duration // default 10 s\nadapters/upstream/pool.go:118: MaxIdemponentCallAttempts: 1"},` +
	`{"role":"assistant","content":"The pool keeps idle connections for 10 s. A request that lands on a connection the server already closed fails before any response byte; resending it once on a fresh connection is safe."},` +
	`{"role":"user","content":"Good. How do we tell that case apart from a real reset mid-response? Please keep it brief and include the relevant code path."}],` +
	`"tools":[{"type":"function","function":{"name":"search_code","description":"Search the repository for a symbol or text and return matching lines with file and line number.","parameters":{"type":"object","properties":{"query":{"type":"string","description":"text or symbol to look for"},"repo":{"type":"string","description":"repository name"},"max_results":{"type":"integer","minimum":1,"maximum":50}},"required":["query"]}}}],` +
	`"tool_choice":"auto","parallel_tool_calls":true,"user":"u-1234","metadata":{"ticket":"OPS-981","env":"staging"}}`)

func benchKey(renameFrom string) *testKey {
	return key(func(k *testKey) {
		k.Provider = "azure"
		k.Body.TemperatureMax = ptr(1.0)
		k.Body.ParamRenames = []Rename{{From: renameFrom, To: "safety_identifier"}}
		k.Body.DefaultBodyFields = []BodyField{{Key: "service_tier", Value: []byte(`"default"`)}}
		k.Headers.ForwardClientHeaders = []string{"x-request-id", "x-trace-*"}
		k.Headers.DefaultHeaders = []headers.Template{
			{Name: "x-team", Parts: []headers.Part{{Var: headers.VarAPIKeyTeamID}}},
			{Name: "openai-project", Parts: []headers.Part{{Literal: "proj_123"}}},
		}
		k.Body.ContentListToString = true
	})
}

func benchInput(body []byte) *adapters.ChatInput {
	client := &fasthttp.RequestHeader{}
	client.Set("Authorization", "Bearer sk-gw-caller")
	client.Set("X-Request-Id", "req-1")
	client.Set("X-Trace-Span", "span-1")
	client.Set("User-Agent", "OpenAI/Python 1.99.0")
	client.Set("X-Stainless-Lang", "python")
	in := &adapters.ChatInput{Body: body, UpstreamModel: "o3-mini", Stream: true, ForceUsage: true,
		ClientHeaders: client, CallerCredential: 1}
	in.Vars[headers.VarAPIKeyTeamID] = "team-7"
	return in
}

// BenchmarkBuildChat2K runs every body edit (model, developer role,
// flattening, max_tokens, clamp, a default field, include_usage; a rename
// whose source is absent) and the header rules on a 2 KB body, in the
// single-pass emitter.
func BenchmarkBuildChat2K(b *testing.B) { benchBuildChat(b, "end_user_id") }

// BenchmarkBuildChat2KRenamePresent is BenchmarkBuildChat2K with the rename
// source present: one pass per edit.
func BenchmarkBuildChat2KRenamePresent(b *testing.B) { benchBuildChat(b, "user") }

func benchBuildChat(b *testing.B, renameFrom string) {
	a, err := compile(benchKey(renameFrom))
	if err != nil {
		b.Fatal(err)
	}
	in := benchInput(chatBody2K)
	b.ReportAllocs()
	b.SetBytes(int64(len(chatBody2K)))
	b.RunParallel(func(pb *testing.PB) {
		req := fasthttp.AcquireRequest()
		for pb.Next() {
			req.Reset()
			if err := a.BuildChat(req, in); err != nil {
				b.Fatal(err)
			}
		}
		fasthttp.ReleaseRequest(req)
	})
}

// BenchmarkBuildChat2KModelOnly is the passthrough case: provider openai,
// no request settings, only `model` changes.
func BenchmarkBuildChat2KModelOnly(b *testing.B) {
	a, _ := compile(key(nil))
	in := &adapters.ChatInput{Body: chatBody2K, UpstreamModel: "gpt-4o"}
	b.ReportAllocs()
	b.SetBytes(int64(len(chatBody2K)))
	req := fasthttp.AcquireRequest()
	for b.Loop() {
		req.Reset()
		if err := a.BuildChat(req, in); err != nil {
			b.Fatal(err)
		}
	}
	fasthttp.ReleaseRequest(req)
}

// BenchmarkRawSetModel2K is the baseline: a single rawjson.SetString of
// `model` on the same body.
func BenchmarkRawSetModel2K(b *testing.B) {
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(chatBody2K)))
	for b.Loop() {
		dst, _ = rawjson.SetString(dst[:0], chatBody2K, "model", "gpt-4o")
	}
}

var chunk = []byte(`{"id":"chatcmpl-C4Hq5a6K3RaPMymUv70btQNYv6SvY","object":"chat.completion.chunk","created":1755137921,"model":"gpt-5-nano-2025-08-07","service_tier":"default","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}],"usage":null,"obfuscation":"WuQNX"}`)

var usageChunk = []byte(`{"id":"chatcmpl-C4Hq5a6K3RaPMymUv70btQNYv6SvY","object":"chat.completion.chunk","created":1755137921,"model":"gpt-5-nano-2025-08-07","service_tier":"default","system_fingerprint":null,"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":100,"total_tokens":112,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":100,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"t9"}`)

var sink []byte
var sinkBool bool
var sinkUsage adapters.Usage

func BenchmarkRewriteModelChunk(b *testing.B) {
	alias := rawjson.AppendQuote(nil, "team-default")
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		dst = RewriteModel(dst[:0], chunk, alias)
	}
	sink = dst
}

func BenchmarkIsUsageOnlyChunk(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkBool = IsUsageOnlyChunk(chunk)
	}
}

func BenchmarkExtractUsage(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkUsage, sinkBool = ExtractUsage(usageChunk)
	}
}

// BenchmarkRenameReasoning is response.reasoning_field's cost per streamed
// chunk that carries the member.
func BenchmarkRenameReasoning(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning":"a step of the reasoning"},"finish_reason":null}]}`)
	dst := make([]byte, 0, 512)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		dst, _ = RenameReasoning(dst[:0], body, "reasoning")
	}
}

var bufferedAnswer = []byte(`{"id":"chatcmpl-mock-1","object":"chat.completion","created":1795705145,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the gw mock provider. This re","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":15,"completion_tokens":5,"total_tokens":20,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_mock"}`)

// BenchmarkBufferedAnswer: a buffered chat answer's model rewrite and usage
// read, in one pass (RewriteModelUsage) and as two (RewriteModel +
// ExtractUsage).
func BenchmarkBufferedAnswer(b *testing.B) {
	dst := make([]byte, 0, 1024)
	alias := []byte(`"gpt"`)
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dst, sinkUsage, sinkBool = RewriteModelUsage(dst[:0], bufferedAnswer, alias)
		}
	})
	b.Run("two-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkUsage, sinkBool = ExtractUsage(bufferedAnswer)
			dst = RewriteModel(dst[:0], bufferedAnswer, alias)
		}
	})
}
