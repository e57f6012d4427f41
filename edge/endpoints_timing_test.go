package edge

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/edge/authn"
)

// fixedUpstream answers every request with one pre-rendered body: an
// upstream that costs the same for every endpoint and allocates nothing,
// so that benchmarks and alloc guards measure gw alone.
func fixedUpstream(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	chat := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1731000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
	emb := []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AACAPwAAAEAAAEBAAACAQA=="}],"model":"text-embedding-3-small","usage":{"prompt_tokens":12,"total_tokens":12}}`)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		if string(ctx.Path()) == "/v1/embeddings" {
			ctx.SetBody(emb)
			return
		}
		ctx.SetBody(chat)
	}}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

func endpointsProxy(tb testing.TB, base string) *Proxy {
	tb.Helper()
	src := `_format_version: "1"
provider_keys:
  - {display_name: oa, api_key: "${K}", api_base: "${BASE}/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: oa}
  - {display_name: emb, provider: openai, model_name: text-embedding-3-small, provider_key: oa, embedding: {dimensions: 4}}
`
	s := compileFile(tb, src, map[string]string{"K": "sk-upstream", "CALLER": "caller-key", "BASE": base})
	h := &snapshot.Holder{}
	h.Store(s)
	return &Proxy{Holder: h}
}

// A ~2 KB embeddings body (a batch of four passages), the size of benchBody.
var embBody = []byte(`{"model":"emb","encoding_format":"base64","input":["You are a helpful assistant that answers briefly and precisely, citing sources when possible.",` +
	`"Summarise the following text in three bullet points: Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.",` +
	`"Sure. Which format do you prefer for the bullet points?","Plain dashes, no markdown headers, and keep each bullet under twenty words please."]}`)

var chatBody = []byte(`{"model":"gpt","messages":[{"role":"system","content":"You are a helpful assistant that answers briefly and precisely, citing sources when possible."},` +
	`{"role":"user","content":"Summarise the following text in three bullet points: Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat."},` +
	`{"role":"assistant","content":"Sure. Which format do you prefer for the bullet points?"},{"role":"user","content":"Plain dashes, no markdown headers, and keep each bullet under twenty words please."}]}`)

// handlerCtx is a request for p.Handle, answered once to warm the pools.
func handlerCtx(tb testing.TB, p *Proxy, path string, body []byte) *fasthttp.RequestCtx {
	tb.Helper()
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody(body)
	if !p.Handle(ctx) || ctx.Response.StatusCode() != 200 {
		tb.Fatalf("warm-up %s: %d %s", path, ctx.Response.StatusCode(), ctx.Response.Body())
	}
	return ctx
}

func benchHandler(b *testing.B, path string, body []byte) {
	p := endpointsProxy(b, fixedUpstream(b))
	ctx := handlerCtx(b, p, path, body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		p.Handle(ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d", ctx.Response.StatusCode())
		}
	}
}

// BenchmarkFullHandlerChatFixed and BenchmarkFullHandlerEmbeddings run the
// whole handler for a buffered ~2 KB request of each endpoint against the
// same fixed loopback upstream: the difference is gw's own work per
// endpoint (target: embeddings ≤ chat).
func BenchmarkFullHandlerChatFixed(b *testing.B) { benchHandler(b, pathChat, chatBody) }

func BenchmarkFullHandlerEmbeddings(b *testing.B) { benchHandler(b, pathEmbeddings, embBody) }

// BenchmarkRequestHotPathEmbeddings is BenchmarkRequestHotPath for
// /v1/embeddings: auth, the read stage (validation, model, input shapes),
// alias and grant, the endpoint check and the upstream request.
func BenchmarkRequestHotPathEmbeddings(b *testing.B) {
	p := endpointsProxy(b, "http://127.0.0.1:1")
	snap := p.Holder.Load()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody(embBody)
	b.SetBytes(int64(len(embBody)))
	b.ReportAllocs()
	now := time.Now()
	for b.Loop() {
		c := acquireCall()
		c.surf, c.snap = surfEmbeddings, snap
		c.caller, _ = authn.Authenticate(&ctx.Request.Header, snap, now)
		if c.caller == nil || !readEndpoint(&ctx, c, &specEmbeddings) {
			b.Fatal("auth or read")
		}
		c.plan = snap.Plans[string(c.cr.Model)]
		if c.plan == nil || !c.caller.Allowed(c.plan) || !c.plan.Endpoints.Has(c.surf.endpoint) {
			b.Fatal("plan")
		}
		c.target = c.plan
		c.in.UpstreamModel = c.plan.UpstreamModel
		fillVars(&c.in.Vars, c.caller.Key, c.plan.Alias)
		req, _ := p.buildEndpoint(&ctx, c, c.plan.Upstream)
		if req == nil {
			b.Fatal("build")
		}
		fasthttp.ReleaseRequest(req)
		releaseCall(c)
	}
}
