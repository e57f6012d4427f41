// Command floorproxy is the floor of an HTTP relay on the perf layout: a
// bare fasthttp server that copies each request to one upstream over a
// keep-alive fasthttp.HostClient and writes the answer back, with no
// parsing, policy, rewriting or accounting. Put beside gw in scenario 8
// (gwperf -mock-addr A -peer floor=http://127.0.0.1:18090/v1,pid=N,model=gpt-4o),
// it shows how much of gw's distance from direct is the extra hop itself
// on shared cores and how much is gw's own work (docs/PERFORMANCE.md).
//
// By default it does its socket I/O as gw does: raw system calls
// (edge/rawsock) on both sides, and each upstream request sent from the
// read that waits for its answer (WriteOnRead, as adapters/upstream does),
// so that the floor is the leanest relay gw's stack can make. -net uses
// the net package's sockets instead (the floor of sessions 15-19).
package main

import (
	"flag"
	"log"
	"net"

	"github.com/valyala/fasthttp"

	"gw/edge/rawsock"
)

// onRead sends each request the client writes from the read of its answer.
type onRead struct{ *rawsock.Conn }

func (c onRead) Write(p []byte) (int, error) { return c.WriteOnRead(p) }

func main() {
	listen := flag.String("listen", "127.0.0.1:18090", "address to listen on")
	up := flag.String("upstream", "127.0.0.1:8090", "host:port of the upstream (the perf mock)")
	auth := flag.String("authorization", "Bearer perf-upstream", "Authorization header sent upstream")
	plain := flag.Bool("net", false, "use the net package's socket I/O instead of gw's (edge/rawsock)")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(serve(ln, *up, *auth, *plain))
}

// serve relays every request on ln to up until ln fails.
func serve(ln net.Listener, up, auth string, plain bool) error {
	hc := &fasthttp.HostClient{Addr: up, MaxConns: 512}
	if !plain {
		hc.Dial = func(addr string) (net.Conn, error) {
			c, err := fasthttp.Dial(addr)
			if err != nil {
				return nil, err
			}
			if rc, ok := rawsock.Wrap(c).(*rawsock.Conn); ok {
				return onRead{rc}, nil
			}
			return c, nil
		}
		ln = rawsock.Listener{Listener: ln}
	}
	handle := func(ctx *fasthttp.RequestCtx) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		ctx.Request.CopyTo(req)
		req.Header.Set("Authorization", auth)
		if err := hc.Do(req, resp); err != nil {
			ctx.Error("upstream: "+err.Error(), fasthttp.StatusBadGateway)
			return
		}
		ctx.SetStatusCode(resp.StatusCode())
		ctx.SetContentTypeBytes(resp.Header.ContentType())
		ctx.SetBody(resp.Body())
	}
	return (&fasthttp.Server{Handler: handle}).Serve(ln)
}
