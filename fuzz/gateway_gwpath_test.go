package fuzz

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/edge/gateway"
	"gw/edge/gateway/plugins/aiproxymulti"
)

// FuzzGatewayRawNoHop: when the raw-header check lets the proxy skip the
// hop-by-hop deletions, the parsed request holds none of those headers.
func FuzzGatewayRawNoHop(f *testing.F) {
	for _, s := range []string{"Host: a\r\n", "Host: a\r\nTE: trailers\r\n", "Host: a\r\nupgrade : x\r\n", "Host: a\r\nX: 1\r\n Keep-Alive: 2\r\n",
		"Host: a\r\nTrailer: X-A\r\nTransfer-Encoding: chunked\r\n", "Host: a\nProxy-Authorization:b\n", "Host: a\r\nKeep-Alive\r\n"} {
		f.Add(s)
	}
	hop := []string{"Proxy-Connection", "Keep-Alive", "TE", "Trailer", "Upgrade", "Proxy-Authorization"}
	f.Fuzz(func(t *testing.T, headers string) {
		var req fasthttp.Request
		if err := req.Read(bufio.NewReader(strings.NewReader("GET / HTTP/1.1\r\n" + headers + "\r\n"))); err != nil {
			return
		}
		if !gateway.RawNoHop(req.Header.RawHeaders()) {
			return
		}
		for k := range req.Header.All() {
			for _, h := range hop {
				if strings.EqualFold(string(k), h) {
					t.Fatalf("%q: skipped the deletions but %s is set", headers, k)
				}
			}
		}
	})
}

// FuzzGatewayStreamUsage: ai-proxy-multi's usage scanner reads the same
// usage from a stream however its bytes are split across reads.
func FuzzGatewayStreamUsage(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6,\"total_tokens\":11}}\r\n\r\ndata: [DONE]\n\n"), uint16(17))
	f.Add([]byte("data:{\"usage\":{\"total_tokens\":1}}\ndata: {\"usage\":null}\n"), uint16(3))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint16) {
		u, ok := aiproxymulti.StreamUsage(stream)
		i := int(cut) % (len(stream) + 1)
		u2, ok2 := aiproxymulti.StreamUsage(stream[:i], stream[i:])
		if u != u2 || ok != ok2 {
			t.Fatalf("split at %d: %+v %v; whole: %+v %v", i, u2, ok2, u, ok)
		}
		if len(stream) < 512 {
			pieces := bytes.SplitAfter(stream, nil) // one byte each
			if u3, ok3 := aiproxymulti.StreamUsage(pieces...); u3 != u || ok3 != ok {
				t.Fatalf("byte by byte: %+v %v; whole: %+v %v", u3, ok3, u, ok)
			}
		}
	})
}
