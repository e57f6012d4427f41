// Command floorproxy is the floor of an HTTP relay on the perf layout: a
// bare fasthttp server that copies each request to one upstream over a
// keep-alive fasthttp.HostClient and writes the answer back, with no
// parsing, policy, rewriting or accounting. Put beside gw in scenario 8
// (gwperf -mock-addr A -peer floor=http://127.0.0.1:18090/v1,pid=N,model=gpt-4o),
// it shows how much of gw's distance from direct is the extra hop itself
// on shared cores and how much is gw's own work (docs/PERFORMANCE.md).
package main

import (
	"flag"
	"log"

	"github.com/valyala/fasthttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18090", "address to listen on")
	up := flag.String("upstream", "127.0.0.1:8090", "host:port of the upstream (the perf mock)")
	auth := flag.String("authorization", "Bearer perf-upstream", "Authorization header sent upstream")
	flag.Parse()
	hc := &fasthttp.HostClient{Addr: *up, MaxConns: 512}
	handle := func(ctx *fasthttp.RequestCtx) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		ctx.Request.CopyTo(req)
		req.Header.Set("Authorization", *auth)
		if err := hc.Do(req, resp); err != nil {
			ctx.Error("upstream: "+err.Error(), fasthttp.StatusBadGateway)
			return
		}
		ctx.SetStatusCode(resp.StatusCode())
		ctx.SetContentTypeBytes(resp.Header.ContentType())
		ctx.SetBody(resp.Body())
	}
	log.Fatal((&fasthttp.Server{Handler: handle}).ListenAndServe(*listen))
}
