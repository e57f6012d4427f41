package gateway

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestRawNoHop(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{"", false}, // not parsed from the wire: delete as before
		{"Host: a\r\nContent-Type: application/json\r\n\r\n", true},
		{"Host: a\r\nTe: trailers\r\n\r\n", false},
		{"host: a\r\nte:trailers\r\n\r\n", false},
		{"Host: a\r\nUPGRADE: websocket\r\n\r\n", false},
		{"Host: a\r\nKeep-Alive: 5\r\n", false},
		{"Proxy-Connection: x\r\n", false},
		{"Host: a\r\nProxy-Authorization: Basic eA==\r\n\r\n", false},
		{"Host: a\r\nTrailer: X\r\n\r\n", false},
		{"Host: a\r\nTrailer : X\r\n\r\n", false},
		// Names that only start like a hop header are kept.
		{"Host: a\r\nTeam: x\r\nUpgraded: y\r\nProxy-Authorization-X: z\r\nKeep-Alive2: q\r\n\r\n", true},
		// A hop name inside a value or a folded line is not a header.
		{"X-A: Upgrade: websocket\r\n\r\n", true},
		{"X-A: a\r\n TE: b\r\n\r\n", true},
		{"Upgrade", true}, // a name without ':' is no header
	} {
		if got := RawNoHop([]byte(tc.raw)); got != tc.want {
			t.Errorf("RawNoHop(%q) = %v; want %v", tc.raw, got, tc.want)
		}
	}
}

// wireCtx parses raw as fasthttp's server does, so that RawHeaders is set.
func wireCtx(t testing.TB, raw string) *fasthttp.RequestCtx {
	t.Helper()
	ctx := &fasthttp.RequestCtx{}
	if err := ctx.Request.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		t.Fatal(err)
	}
	ctx.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000})
	return ctx
}

// TestHopHeadersStripped: hop-by-hop headers never reach the upstream,
// whether the raw-header check skips the deletions or not, with and
// without a plugin that adds one after parsing.
func TestHopHeadersStripped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		var b strings.Builder
		for k, v := range ctx.Request.Header.All() {
			b.WriteString(string(k) + "=" + string(v) + "\n")
		}
		ctx.SetBodyString(b.String())
	}}
	go srv.Serve(ln)
	defer srv.Shutdown()
	addr := ln.Addr().String()
	g := newGW(t, map[string]string{
		"plain": `{"uri":"/plain","upstream":{"nodes":{"` + addr + `":1}}}`,
		"rw":    `{"uri":"/rw","plugins":{"proxy-rewrite":{"headers":{"set":{"Keep-Alive":"9","X-Kept":"1"}}}},"upstream":{"nodes":{"` + addr + `":1}}}`,
	})
	for _, tc := range []struct {
		name, raw string
		keep      []string
	}{
		{"no hop headers", "GET /plain HTTP/1.1\r\nHost: gw.test\r\nX-Forwarded-For: 10.0.0.1\r\nX-A: b\r\n\r\n", []string{"X-A=b", "X-Forwarded-For=10.0.0.1, 127.0.0.1", "X-Forwarded-Proto=http", "X-Forwarded-Host=gw.test"}},
		{"hop headers", "GET /plain HTTP/1.1\r\nHost: gw.test\r\nte: trailers\r\nUpgrade: h2c\r\nKeep-Alive: 5\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\nX-A: b\r\n\r\n", []string{"X-A=b"}},
		{"plugin adds one", "GET /rw HTTP/1.1\r\nHost: gw.test\r\n\r\n", []string{"X-Kept=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wireCtx(t, tc.raw)
			g.Handler(ctx)
			body := string(ctx.Response.Body())
			if ctx.Response.StatusCode() != 200 {
				t.Fatalf("status %d %s", ctx.Response.StatusCode(), body)
			}
			for _, h := range hopHeaders {
				if strings.Contains(strings.ToLower(body), strings.ToLower(h)+"=") {
					t.Errorf("%s reached the upstream:\n%s", h, body)
				}
			}
			for _, k := range tc.keep {
				if !strings.Contains(body, k+"\n") {
					t.Errorf("missing %s upstream:\n%s", k, body)
				}
			}
		})
	}
}
