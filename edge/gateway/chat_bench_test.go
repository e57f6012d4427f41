package gateway

import (
	"net"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"
)

// chatUpstream answers every request with the pre-rendered chat completion
// of edge's fixedUpstream, so that BenchmarkProxyChat and edge's
// BenchmarkFullHandlerChatFixed drive the same upstream work.
func chatUpstream(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	chat := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1731000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(chat)
	}}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

// benchChatBody is edge's chatBody (~1.5 KB): the request of
// BenchmarkFullHandlerChatFixed.
var benchChatBody = []byte(`{"model":"gpt","messages":[{"role":"system","content":"You are a helpful assistant that answers briefly and precisely, citing sources when possible."},` +
	`{"role":"user","content":"Summarise the following text in three bullet points: Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat."},` +
	`{"role":"assistant","content":"Sure. Which format do you prefer for the bullet points?"},{"role":"user","content":"Plain dashes, no markdown headers, and keep each bullet under twenty words please."}]}`)

// chatCtx is the proxied chat request of BenchmarkProxyChat, with the
// headers a client sends, parsed from the wire as the server does.
func chatCtx(tb testing.TB) *fasthttp.RequestCtx {
	return wireCtx(tb, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer caller-key\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(benchChatBody))+"\r\n\r\n"+string(benchChatBody))
}

// BenchmarkProxyChat is the general gateway's counterpart of edge's
// BenchmarkFullHandlerChatFixed: the same ~1.5 KB chat request through a
// plugin-less /v1/* route to the same fixed loopback upstream, so that the
// two differ by gw's own work per request (the AI path also parses and
// rewrites the JSON; target: this ≤ that in instructions).
func BenchmarkProxyChat(b *testing.B) {
	g := newGW(b, map[string]string{"v1": `{"uri":"/v1/*","upstream":{"nodes":{"` + chatUpstream(b) + `":1}}}`})
	ctx := chatCtx(b)
	b.SetBytes(int64(len(benchChatBody)))
	b.ReportAllocs()
	for b.Loop() {
		ctx.Request.Header.Del("X-Forwarded-For")
		g.Handler(ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
