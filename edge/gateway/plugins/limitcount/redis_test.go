package limitcount

import (
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/edge/gateway/plugin"
	"gw/edge/gateway/vars"
	"gw/limiter/redistest"
)

// proc is one gw process's plugin state: its own Shared (connections,
// local counters).
type proc struct{ env *plugin.Env }

func newProc(t testing.TB) *proc {
	shared := plugin.NewShared()
	t.Cleanup(func() {
		shared.Each(func(_ string, v any) {
			if c, ok := v.(interface{ Close() }); ok {
				c.Close()
			}
		})
	})
	return &proc{env: &plugin.Env{Snap: &admingw.Snapshot{}, Shared: shared}}
}

func (p *proc) compile(t testing.TB, conf string) plugin.Plugin {
	t.Helper()
	if err := Check(json.RawMessage(conf)); err != nil {
		t.Fatalf("Check %s: %v", conf, err)
	}
	pl, err := New(json.RawMessage(conf), p.env, "route/r")
	if err != nil {
		t.Fatalf("New %s: %v", conf, err)
	}
	return pl
}

type result struct {
	ok            bool
	code          int
	body          string
	limit, remain string
	reset         int
}

// call runs one request from client address 10.0.0.ip through p.
func call(p plugin.Plugin, ip int) result {
	r := &fasthttp.RequestCtx{}
	r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(10, 0, byte(ip>>8), byte(ip))})
	c := &plugin.Ctx{}
	c.Reset(r, &vars.Context{RouteID: "r"})
	ok := p.Access(c)
	p.HeaderFilter(c)
	h := &r.Response.Header
	reset, _ := strconv.Atoi(string(h.Peek("X-RateLimit-Reset")))
	return result{ok: ok, code: r.Response.StatusCode(), body: string(r.Response.Body()),
		limit: string(h.Peek("X-RateLimit-Limit")), remain: string(h.Peek("X-RateLimit-Remaining")), reset: reset}
}

// TestRedisAnyWindow: policy redis with a 2 s window and a standard one;
// two processes share the count, the reset counts down to the window end,
// and the next window admits again.
func TestRedisAnyWindow(t *testing.T) {
	srv := redistest.Start(t)
	host, port, _ := net.SplitHostPort(srv.Addr())
	for _, window := range []int{2, 60} {
		t.Run(strconv.Itoa(window), func(t *testing.T) {
			conf := fmt.Sprintf(`{"count":3,"time_window":%d,"rejected_code":429,"policy":"redis","redis_host":%q,"redis_port":%s}`, window, host, port)
			a, b := newProc(t).compile(t, conf), newProc(t).compile(t, conf)
			// Start early in a window so the four calls share it.
			for time.Now().UnixMilli()%int64(window*1000) > int64(window*1000)-500 {
				time.Sleep(20 * time.Millisecond)
			}
			for i, p := range []plugin.Plugin{a, b, a} {
				r := call(p, 1)
				if !r.ok || r.remain != strconv.Itoa(2-i) || r.limit != "3" || r.reset < 1 || r.reset > window {
					t.Fatalf("request %d: %+v", i, r)
				}
			}
			r := call(b, 1)
			if r.ok || r.code != 429 || r.remain != "0" || r.reset < 1 || r.reset > window {
				t.Fatalf("fourth: %+v; want 429 with reset in [1,%d]", r, window)
			}
			if window > 2 {
				return
			}
			deadline := time.Now().Add(5 * time.Second)
			for !call(a, 1).ok {
				if time.Now().After(deadline) {
					t.Fatal("the next 2 s window never admitted")
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestRedisClusterPolicy: policy redis-cluster on a real 3-primary
// cluster: two processes admit exactly the limit per client under
// concurrent load, for clients whose keys live on every primary.
func TestRedisClusterPolicy(t *testing.T) {
	cl := redistest.StartCluster(t)
	nodes, _ := json.Marshal(cl.Addrs())
	conf := fmt.Sprintf(`{"count":20,"time_window":600,"rejected_code":429,"policy":"redis-cluster","redis_cluster_nodes":%s,"redis_cluster_name":"test"}`, nodes)
	procs := []plugin.Plugin{newProc(t).compile(t, conf), newProc(t).compile(t, conf)}
	const clients = 10
	var admitted [clients]atomic.Int64
	var other atomic.Value
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				ip := (i + g) % clients
				r := call(procs[(i+g)%2], ip)
				switch {
				case r.ok:
					admitted[ip].Add(1)
				case r.code != 429:
					other.Store(fmt.Sprintf("%+v", r))
				}
			}
		}(g)
	}
	wg.Wait()
	if o := other.Load(); o != nil {
		t.Fatalf("unexpected answer %s", o)
	}
	for ip := range admitted {
		if n := admitted[ip].Load(); n != 20 {
			t.Fatalf("client %d: admitted %d; want exactly 20", ip, n)
		}
	}
}

// TestRedisDown: as APISIX, a Redis that cannot count fails the request
// with 500 unless allow_degradation lets it through (without headers);
// once Redis is back, requests are counted again.
func TestRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	host, port, _ := net.SplitHostPort(srv.Addr())
	base := fmt.Sprintf(`"count":2,"time_window":60,"policy":"redis","redis_host":%q,"redis_port":%s,"redis_timeout":300`, host, port)
	pr := newProc(t)
	strict := pr.compile(t, `{`+base+`}`)
	lenient := pr.compile(t, `{`+base+`,"allow_degradation":true}`)
	if r := call(strict, 1); !r.ok || r.remain != "1" {
		t.Fatalf("before the outage: %+v", r)
	}
	srv.Kill()
	for i := 0; i < 8; i++ { // through the failures and the open circuit
		if r := call(strict, 1); r.ok || r.code != 500 || r.body != `{"error_msg":"failed to limit count"}` {
			t.Fatalf("strict %d with Redis down: %+v", i, r)
		}
		if r := call(lenient, 1); !r.ok || r.limit != "" {
			t.Fatalf("lenient %d with Redis down: %+v; want through without headers", i, r)
		}
	}
	srv.Restart() // empty: the counts start again
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := call(strict, 2)
		if r.ok && r.remain == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after Redis came back: %+v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The probe replaced the client: none of its connections is one the
	// outage broke, so the very next call is counted.
	if r := call(lenient, 2); !r.ok || r.limit == "" || r.remain != "1" {
		t.Fatalf("lenient after the outage: %+v; want counted again", r)
	}
}

// TestRedisSSL: redis_ssl to a TLS-only Redis; redis_ssl_verify checks the
// certificate against the system roots, which do not hold the test CA.
func TestRedisSSL(t *testing.T) {
	srv := redistest.StartTLS(t)
	host, port, _ := net.SplitHostPort(srv.Addr())
	base := fmt.Sprintf(`"count":2,"time_window":5,"policy":"redis","redis_host":%q,"redis_port":%s,"redis_timeout":500`, host, port)
	a := newProc(t).compile(t, `{`+base+`,"redis_ssl":true}`)
	b := newProc(t).compile(t, `{`+base+`,"redis_ssl":true}`)
	for time.Now().UnixMilli()%5000 > 4000 {
		time.Sleep(50 * time.Millisecond)
	}
	if r1, r2, r3 := call(a, 1), call(b, 1), call(a, 1); !r1.ok || !r2.ok || r3.ok || r3.code != 503 {
		t.Fatalf("over TLS: %+v %+v %+v; want two admitted across processes, then 503", r1, r2, r3)
	}
	if r := call(newProc(t).compile(t, `{`+base+`}`), 1); r.code != 500 {
		t.Fatalf("plain TCP to a TLS port: %+v; want 500", r)
	}
	if r := call(newProc(t).compile(t, `{`+base+`,"redis_ssl":true,"redis_ssl_verify":true}`), 1); r.code != 500 {
		t.Fatalf("verified against roots without the test CA: %+v; want 500", r)
	}
}

// TestClientsSharedAndClosed: configurations with one connection setting
// share one client across routes; a different setting gets its own; a
// client is closed once no compiled plugin uses it.
func TestClientsSharedAndClosed(t *testing.T) {
	srv := redistest.Start(t)
	host, port, _ := net.SplitHostPort(srv.Addr())
	pr := newProc(t)
	conn := fmt.Sprintf(`"policy":"redis","redis_host":%q,"redis_port":%s`, host, port)
	ps := []plugin.Plugin{
		pr.compile(t, `{"count":1,"time_window":60,`+conn+`}`),
		pr.compile(t, `{"count":5,"time_window":7,"key":"http_x_user",`+conn+`}`),
	}
	cs, _ := pr.env.Shared.GetOrCreate("limit-count/redis", nil)
	if n := cs.(*clients).open(); n != 1 {
		t.Fatalf("%d clients for one connection setting; want 1", n)
	}
	ps = append(ps, pr.compile(t, `{"count":1,"time_window":60,"redis_timeout":50,`+conn+`}`))
	if n := cs.(*clients).open(); n != 2 {
		t.Fatalf("%d clients for two settings; want 2", n)
	}
	lim := ps[0].(*limitCount).lim
	for _, p := range ps {
		call(p, 1)
	}
	ps = nil
	deadline := time.Now().Add(10 * time.Second)
	for cs.(*clients).open() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d clients still open after their plugins were dropped", cs.(*clients).open())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	for lim.State().String() != "circuit_open" { // Close leaves the circuit open for good
		if time.Now().After(deadline) {
			t.Fatalf("the dropped client was not closed: %s", lim.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkAccessRedis: one limit-count check counted in a local Redis
// (one EVALSHA round trip on loopback): sequential is the latency a
// request pays, parallel shows rueidis pipelining concurrent checks.
func BenchmarkAccessRedis(b *testing.B) {
	srv := redistest.Start(b)
	host, port, _ := net.SplitHostPort(srv.Addr())
	check := func(p plugin.Plugin) func() bool {
		r := &fasthttp.RequestCtx{}
		r.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)})
		c := &plugin.Ctx{Buf: make([]byte, 0, 256), RateInfo: make([]byte, 0, 256)}
		vc := &vars.Context{RouteID: "r"}
		return func() bool {
			c.Reset(r, vc)
			ok := p.Access(c)
			p.HeaderFilter(c)
			return ok
		}
	}
	cl := redistest.StartCluster(b)
	nodes, _ := json.Marshal(cl.Addrs())
	confs := map[string]string{
		"redis/window=60s":        `{"count":1000000000000,"time_window":60,"policy":"redis","redis_host":"` + host + `","redis_port":` + port + `}`,
		"redis/window=7s":         `{"count":1000000000000,"time_window":7,"policy":"redis","redis_host":"` + host + `","redis_port":` + port + `}`,
		"redis-cluster/window=7s": `{"count":1000000000000,"time_window":7,"policy":"redis-cluster","redis_cluster_name":"b","redis_cluster_nodes":` + string(nodes) + `}`,
	}
	for _, w := range []string{"redis/window=60s", "redis/window=7s", "redis-cluster/window=7s"} {
		p := newProc(b).compile(b, confs[w])
		b.Run(w, func(b *testing.B) {
			f := check(p)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if !f() {
					b.Fatal("refused")
				}
			}
		})
		b.Run(w+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				f := check(p)
				for pb.Next() {
					f()
				}
			})
		})
	}
}
