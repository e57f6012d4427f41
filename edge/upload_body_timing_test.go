package edge

import (
	"bytes"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// BenchmarkReadBody: a chat-sized request over an in-memory connection
// with the listener streaming bodies and readBody reading them (as
// NewServer serves), against fasthttp reading the body itself (the
// listener before uploads). Bodies up to 8 KiB come with the headers; a
// 32 KiB one is read on by readBody (one extra copy).
func BenchmarkReadBody(b *testing.B) {
	for _, size := range []int{2 << 10, 32 << 10} {
		for _, streaming := range []bool{false, true} {
			name := "buffered-listener"
			if streaming {
				name = "streaming-listener+readBody"
			}
			b.Run(name+"/"+sizeName(size), func(b *testing.B) {
				benchReadBody(b, size, streaming)
			})
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<10 {
		return string(rune('0'+n>>10/10%10)) + string(rune('0'+n>>10%10)) + "KiB"
	}
	return "small"
}

func benchReadBody(b *testing.B, size int, streaming bool) {
	const limit = 1 << 20
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{
		StreamRequestBody: streaming, DisablePreParseMultipartForm: true, MaxRequestBodySize: limit,
		Handler: func(ctx *fasthttp.RequestCtx) {
			if streaming && !readBody(ctx, limit) {
				return
			}
			if len(ctx.PostBody()) != size {
				ctx.SetStatusCode(500)
			}
		},
	}
	go srv.Serve(ln) //nolint:errcheck
	defer srv.Shutdown()
	c := &fasthttp.HostClient{Addr: "mem", Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	body := bytes.Repeat([]byte("x"), size)
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://mem/v1/chat/completions")
	req.SetBody(body)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Do(req, resp); err != nil || resp.StatusCode() != 200 {
			b.Fatalf("%v %d", err, resp.StatusCode())
		}
	}
}
