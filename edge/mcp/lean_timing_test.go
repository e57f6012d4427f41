package mcp

import (
	"bytes"
	"context"
	"testing"
)

// upstreamLeg returns a function making the upstream leg of the bench
// call alone: the same tools/call, as gw's lean path writes it, in gw's
// upstream session, on the lean client's connections, its answer read
// whole; no work of gw's handler.
func upstreamLeg(b *testing.B, h *Handler, sid string) func() {
	b.Helper()
	srv := h.Holder.Load().Resources.MCPServers[0]
	s := h.sess.get(sid)
	cs, err := s.upstream(context.Background(), h.transport(), srv)
	if err != nil {
		b.Fatal(err)
	}
	lc := h.lean(srv)
	body, _ := appendCallRequest(nil, []byte("gw-call-leg"), "echo", nil, []byte(`{"text":"hello"}`), nil)
	sid, pv := cs.ID(), cs.InitializeResult().ProtocolVersion
	var ans []byte
	return func() {
		var x exchange
		if err := x.send(context.Background(), lc, sid, pv, body); err != nil {
			b.Fatal(err)
		}
		ans, err = x.readAll(ans[:0], MaxAnswerBytes)
		x.release()
		if err != nil || !bytes.Contains(ans, []byte(`"hello"`)) {
			b.Fatalf("%v %s", err, ans)
		}
	}
}

// BenchmarkToolsCallUpstreamLeg is the upstream leg of a lean tools/call
// alone (upstreamLeg): the HTTP exchange with the server and the server's
// work, which gw's relay overhead does not include.
func BenchmarkToolsCallUpstreamLeg(b *testing.B) {
	h, sid := benchHandler(b)
	leg := upstreamLeg(b, h, sid)
	b.ReportAllocs()
	for b.Loop() {
		leg()
	}
}

// BenchmarkToolsCallOwnWork measures gw's own work per tools/call on the
// lean path: each iteration makes the call through gw's handler and the
// upstream leg alone (upstreamLeg, same connections), alternating which
// goes first, and reports the median and mean of the differences: what gw
// does besides waiting for the server (authentication, session, policy,
// limits, the request's encoding and the answer's reading, the caller's
// answer, usage and metrics). allocs/op counts both legs and the
// in-process server's allocations; added-allocs/call is gw's.
func BenchmarkToolsCallOwnWork(b *testing.B) {
	for _, accept := range []string{"application/json", sdkAccept} {
		name := "accept=json"
		if accept == sdkAccept {
			name = "accept=json+sse"
		}
		b.Run(name, func(b *testing.B) {
			h, sid := benchHandler(b)
			leg := upstreamLeg(b, h, sid)
			ctx := serveAccept(h, "", benchCall, sid, accept)
			via := func() {
				ctx.Response.Reset()
				h.Serve(ctx, "")
				if ctx.Response.StatusCode() != 200 || !bytes.Contains(ctx.Response.Body(), []byte(`"hello"`)) {
					b.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
			reportPaired(b, "own", via, leg)
		})
	}
}
