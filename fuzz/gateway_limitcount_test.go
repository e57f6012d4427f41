package fuzz

import (
	"bytes"
	"encoding/json"
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/plugins/limitcount"
	"gw/edge/gateway/vars"
)

// FuzzGatewayLimitCount: any limit-count configuration is refused by the
// write-time check or compiles, and a compiled local one counts requests
// without panicking (the check's window range must match the limiter's).
func FuzzGatewayLimitCount(f *testing.F) {
	for _, s := range []string{
		`{"count":1,"time_window":3}`, `{"count":2,"time_window":4294967296}`, `{"count":2,"time_window":4294967297}`,
		`{"count":9223372036854775807,"time_window":1}`, `{"count":1,"time_window":86400,"group":"g","key_type":"constant","key":"k"}`,
		`{"count":1,"time_window":60,"policy":"redis-cluster","redis_cluster_nodes":["a:1"],"redis_cluster_name":"c","redis_ssl":true}`,
		`{"count":1,"time_window":60,"redis_port":1}`,
	} {
		f.Add(s)
	}
	shared := plugin.NewShared()
	f.Cleanup(func() {
		shared.Each(func(_ string, v any) {
			if c, ok := v.(interface{ Close() }); ok {
				c.Close()
			}
		})
	})
	f.Fuzz(func(t *testing.T, s string) {
		raw := json.RawMessage(s)
		err := limitcount.Check(raw)
		var probe map[string]json.RawMessage
		if err != nil || json.Unmarshal(raw, &probe) != nil {
			return
		}
		if p := probe["policy"]; p != nil && !bytes.Equal(p, []byte(`"local"`)) {
			return // no network from a fuzz target
		}
		env := &plugin.Env{Snap: &admingw.Snapshot{}, Shared: shared}
		p, err := limitcount.New(raw, env, "route/f")
		if err != nil {
			t.Fatalf("Check accepted %s but New refused it: %v", s, err)
		}
		r := &fasthttp.RequestCtx{}
		r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		c := &plugin.Ctx{}
		for i := 0; i < 2; i++ {
			c.Reset(r, &vars.Context{RouteID: "f"})
			p.Access(c)
			p.HeaderFilter(c)
		}
	})
}
