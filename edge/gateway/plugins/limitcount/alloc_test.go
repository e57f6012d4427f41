//go:build !race

package limitcount

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

// TestAccessAllocs: a local limit-count check (a standard window and an
// odd one, admitted and refused) allocates nothing once the key is known.
func TestAccessAllocs(t *testing.T) {
	pr := newProc(t)
	for _, conf := range []string{
		`{"count":1000000000,"time_window":60}`,
		`{"count":1000000000,"time_window":7}`,
		`{"count":1,"time_window":7,"rejected_code":429,"rejected_msg":"no"}`,
	} {
		p := pr.compile(t, conf)
		r := &fasthttp.RequestCtx{}
		r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)})
		c := &plugin.Ctx{Buf: make([]byte, 0, 256), RateInfo: make([]byte, 0, 256)}
		run := func() {
			c.Reset(r, &vars.Context{RouteID: "r"})
			p.Access(c)
			p.HeaderFilter(c)
		}
		run()
		if n := testing.AllocsPerRun(1000, run); n != 0 {
			t.Errorf("%s: %v allocs per check; want 0", conf, n)
		}
	}
}

// BenchmarkAccess: one local limit-count check (key, count, headers).
func BenchmarkAccess(b *testing.B) {
	for _, w := range []string{"60", "7"} {
		conf := `{"count":1000000000,"time_window":` + w + `}`
		b.Run("window="+w+"s", func(b *testing.B) {
			p := newProc(b).compile(b, conf)
			r := &fasthttp.RequestCtx{}
			r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)})
			c := &plugin.Ctx{Buf: make([]byte, 0, 256), RateInfo: make([]byte, 0, 256)}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.Reset(r, &vars.Context{RouteID: "r"})
				p.Access(c)
				p.HeaderFilter(c)
			}
		})
	}
}
