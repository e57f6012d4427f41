package edge

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

var streamBody = []byte(`{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`)

// startStream runs the handler for a streaming call and returns its ctx
// with the committed body stream not yet written.
func startStream(t *testing.T, p *Proxy) *fasthttp.RequestCtx {
	t.Helper()
	ctx := new(fasthttp.RequestCtx)
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody(streamBody)
	if !p.Handle(ctx) || ctx.Response.StatusCode() != 200 || !ctx.Response.IsBodyStream() {
		t.Fatalf("stream not committed: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	return ctx
}

// TestStreamStateOutlivesWriteTo replays fasthttp's order of calls on a
// body stream — WriteTo, then (later, on the same connection) the close —
// with a second stream starting in between. The per-stream state must not
// return to its pool before the close: if it did, the second stream would
// get it and the first stream's close would end the second one (its caller
// then sees a truncated body, and the relay a nil pointer).
func TestStreamStateOutlivesWriteTo(t *testing.T) {
	p := proxyFor(t, startMock(t))
	for i := 0; i < 50; i++ { // sync.Pool is probabilistic under -race: repeat
		ctx1 := startStream(t, p)
		var out1 bytes.Buffer
		if _, err := ctx1.Response.BodyStream().(io.WriterTo).WriteTo(&out1); err != nil {
			t.Fatal(err)
		}
		ctx2 := startStream(t, p) // between stream 1's WriteTo and its close
		ctx1.Response.ResetBody() // fasthttp closes stream 1's body now
		var out2 bytes.Buffer
		w := bufio.NewWriter(&out2)
		if err := ctx2.Response.Write(w); err != nil {
			t.Fatalf("stream 2: %v", err)
		}
		w.Flush()
		for n, out := range []string{out1.String(), out2.String()} {
			if !strings.Contains(out, "data: [DONE]") || strings.Count(out, `"finish_reason":"stop"`) != 1 {
				t.Fatalf("iteration %d, stream %d incomplete:\n%s", i, n+1, out)
			}
		}
	}
}

// TestConcurrentStreamsComplete serves streams through a real fasthttp
// server from many connections at once; every stream must arrive whole.
// Under -race this also proves the relay state is never shared.
func TestConcurrentStreamsComplete(t *testing.T) {
	p := proxyFor(t, startMock(t))
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if !p.Handle(ctx) {
			ctx.SetStatusCode(404)
		}
	}}
	go srv.Serve(ln) //nolint:errcheck
	defer srv.Shutdown()
	const workers, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }, StreamResponseBody: true}
			for i := 0; i < each; i++ {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				req.SetRequestURI("http://gw/v1/chat/completions")
				req.Header.SetMethod("POST")
				req.Header.Set("Authorization", "Bearer caller-key")
				req.SetBody(streamBody)
				err := c.DoTimeout(req, resp, 10*time.Second)
				var body []byte
				if err == nil {
					body, err = io.ReadAll(resp.BodyStream())
				}
				fasthttp.ReleaseRequest(req)
				fasthttp.ReleaseResponse(resp)
				if err == nil && (!bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) || bytes.Count(body, []byte(`"finish_reason":"stop"`)) != 1) {
					err = fmt.Errorf("incomplete stream:\n%s", body)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
