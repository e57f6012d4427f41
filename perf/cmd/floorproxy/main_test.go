package main

import (
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"
)

// The floor relays requests and answers unchanged but for the upstream's
// Authorization, over kept-alive connections, on either socket layer.
func TestFloorRelays(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run("net="+strconv.FormatBool(plain), func(t *testing.T) {
			upLn, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var dials, wrongAuth atomic.Int64
			upSrv := &fasthttp.Server{
				Handler: func(ctx *fasthttp.RequestCtx) {
					if string(ctx.Request.Header.Peek("Authorization")) != "Bearer up" {
						wrongAuth.Add(1)
					}
					ctx.SetContentType("application/json")
					ctx.SetBody(append([]byte("echo:"), ctx.PostBody()...))
				},
				ConnState: func(_ net.Conn, s fasthttp.ConnState) {
					if s == fasthttp.StateNew {
						dials.Add(1)
					}
				},
			}
			go upSrv.Serve(upLn)
			defer upSrv.Shutdown()

			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go serve(ln, upLn.Addr().String(), "Bearer up", plain)
			defer ln.Close()

			c := &fasthttp.HostClient{Addr: ln.Addr().String()}
			for i := range 200 {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				req.SetRequestURI("http://" + ln.Addr().String() + "/v1/chat/completions")
				req.Header.SetMethod("POST")
				req.Header.Set("Authorization", "Bearer caller")
				body := `{"n":` + strconv.Itoa(i) + `}`
				req.SetBodyString(body)
				if err := c.Do(req, resp); err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode() != 200 || string(resp.Body()) != "echo:"+body || string(resp.Header.ContentType()) != "application/json" {
					t.Fatalf("request %d: status %d body %q", i, resp.StatusCode(), resp.Body())
				}
				fasthttp.ReleaseRequest(req)
				fasthttp.ReleaseResponse(resp)
			}
			if n := wrongAuth.Load(); n != 0 {
				t.Fatalf("%d requests reached the upstream without its Authorization", n)
			}
			if n := dials.Load(); n != 1 {
				t.Fatalf("%d upstream connections for 200 sequential requests; want 1 (kept alive)", n)
			}
		})
	}
}
