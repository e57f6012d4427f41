package limitcount

import (
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
)

func TestAppendJSONString(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := string(AppendJSONString(nil, []byte(in))); got != want {
			t.Fatalf("%q: got %s; want %s", in, got, want)
		}
		var s string
		if err := json.Unmarshal([]byte(want), &s); err != nil || s != in {
			t.Fatalf("%s does not decode back to %q: %v", want, in, err)
		}
	}
	f("a", `"a"`)
	f(`q"b\`, `"q\"b\\"`)
	f("\x01\n", `"\u0001\u000a"`)
	f("é", `"é"`)
}

func TestLimit(t *testing.T) {
	shared := plugin.NewShared()
	defer shared.Each(func(_ string, v any) {
		if c, ok := v.(interface{ Close() }); ok {
			c.Close()
		}
	})
	env := &plugin.Env{Snap: &admingw.Snapshot{}, Shared: shared}
	req := func(p plugin.Plugin, ip byte, hdr string) (*plugin.Ctx, bool) {
		r := &fasthttp.RequestCtx{}
		r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(10, 0, 0, ip)})
		if hdr != "" {
			r.Request.Header.Set("X-User", hdr)
		}
		c := &plugin.Ctx{}
		c.Reset(r, &vars.Context{RouteID: "1"})
		ok := p.Access(c)
		p.HeaderFilter(c)
		return c, ok
	}
	for _, window := range []int{60, 7} { // the limiter's window, and one counted here
		t.Run(strconv.Itoa(window), func(t *testing.T) {
			p, err := New(json.RawMessage(`{"count":2,"time_window":`+strconv.Itoa(window)+`,"rejected_code":429,"rejected_msg":"no"}`), env, "route/"+strconv.Itoa(window))
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []bool{true, true, false} {
				c, ok := req(p, 1, "")
				if ok != want {
					t.Fatalf("request %d: allowed %v; want %v", i, ok, want)
				}
				rem := string(c.R.Response.Header.Peek("X-RateLimit-Remaining"))
				if wantRem := strconv.Itoa(max(1-i, 0)); rem != wantRem {
					t.Fatalf("request %d: remaining %q; want %s", i, rem, wantRem)
				}
				if !ok && (c.R.Response.StatusCode() != 429 || string(c.R.Response.Body()) != `{"error_msg":"no"}`) {
					t.Fatalf("refusal %d %s", c.R.Response.StatusCode(), c.R.Response.Body())
				}
				var info map[string]any
				if err := json.Unmarshal(c.RateInfo, &info); err != nil || info["rate_limiting_key"] != "10.0.0.1" || info["rate_limiting_limit"] != 2.0 {
					t.Fatalf("rate_limiting_info %s: %v", c.RateInfo, err)
				}
			}
			if _, ok := req(p, 2, ""); !ok {
				t.Fatal("another client address shares the counter")
			}
		})
	}
	// An undefined key variable falls back to the client address.
	p, err := New(json.RawMessage(`{"count":1,"time_window":60,"key":"http_x_user"}`), env, "route/hdr")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := req(p, 3, "a"); !ok {
		t.Fatal("first a refused")
	}
	if _, ok := req(p, 3, "b"); !ok {
		t.Fatal("b shares a's counter")
	}
	if _, ok := req(p, 3, ""); !ok {
		t.Fatal("no header: the fallback key 10.0.0.3 is new")
	}
	if c, ok := req(p, 3, ""); ok || c.R.Response.StatusCode() != 503 {
		t.Fatal("fallback key counted twice allowed")
	}
}

// TestCheck: what the write-time check refuses, naming the field.
func TestCheck(t *testing.T) {
	f := func(conf, wantErr string) {
		t.Helper()
		err := Check(json.RawMessage(conf))
		if wantErr == "" && err != nil || wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("%s: got %v; want %q", conf, err, wantErr)
		}
	}
	f(`{"count":1,"time_window":7}`, "")
	f(`{"count":1,"time_window":7,"policy":"redis","redis_host":"h","redis_ssl":true,"redis_ssl_verify":true}`, "")
	f(`{"count":1,"time_window":7,"policy":"redis-cluster","redis_cluster_nodes":["a:1","[::1]:7000"],"redis_cluster_name":"c","redis_cluster_ssl":true,"redis_password":"p"}`, "")
	f(`{"count":1,"time_window":60,"key":"nosuchvar"}`, "unknown variable")
	f(`{"count":1,"time_window":4294967297}`, "above the longest window")
	f(`{"count":1,"time_window":60,"policy":"redis-sentinel"}`, "not built")
	f(`{"count":1,"time_window":60,"policy":"redis"}`, "needs `redis_host`")
	f(`{"count":1,"time_window":60,"policy":"redis-cluster","redis_cluster_nodes":["a:1"]}`, "needs `redis_cluster_nodes` and `redis_cluster_name`")
	f(`{"count":1,"time_window":60,"policy":"redis-cluster","redis_cluster_nodes":["a"],"redis_cluster_name":"c"}`, "#0 \"a\" is not host:port")
	f(`{"count":1,"time_window":60,"redis_host":"h"}`, "`redis_host` applies to policy redis, not local")
	f(`{"count":1,"time_window":60,"redis_timeout":5}`, "`redis_timeout` applies to policy redis or redis-cluster, not local")
	f(`{"count":1,"time_window":60,"policy":"redis-cluster","redis_cluster_nodes":["a:1"],"redis_cluster_name":"c","redis_database":1}`, "`redis_database` applies to policy redis, not redis-cluster")
	f(`{"count":1,"time_window":60,"policy":"redis","redis_host":"h","redis_cluster_ssl":true}`, "`redis_cluster_ssl` applies to policy redis-cluster, not redis")
}

func TestInterner(t *testing.T) {
	in := newInterner()
	a := in.get([]byte("key"))
	b := in.get([]byte("key"))
	if a != "key" || b != "key" {
		t.Fatal(a, b)
	}
	if n := testing.AllocsPerRun(100, func() { in.get([]byte("key")) }); n != 0 {
		t.Errorf("known key: %v allocs", n)
	}
}
