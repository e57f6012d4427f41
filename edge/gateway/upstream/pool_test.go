package upstream

import (
	"math"
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	admingw "gw/admin/gateway"
	"gw/admin/store"
	"gw/edge/gateway/vars"
)

// upstreamOf compiles an upstream body as the admin runner does.
func upstreamOf(t testing.TB, body string) *admingw.Upstream {
	t.Helper()
	st := admingw.NewState("/gw")
	st.Apply(store.Event{Type: store.EventPut, KV: store.KV{Key: "/gw/upstreams/u", Value: []byte(body), ModRev: 1}})
	s := admingw.Compile(st, 1)
	if len(s.Errors) > 0 {
		t.Fatalf("compile: %+v", s.Errors)
	}
	return s.Upstreams["u"]
}

func poolOf(t testing.TB, body string) *Pool {
	t.Helper()
	p, err := New(upstreamOf(t, body), nil, &admingw.Snapshot{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func picks(t *testing.T, p *Pool, n int, key string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		var tried Tried
		k := []byte(key)
		if key == "" {
			k = nil
		}
		j, err := p.Pick(k, &tried)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteByte("abcdef"[j])
	}
	return b.String()
}

func TestRoundRobinSmooth(t *testing.T) {
	// Nodes sort by address: a=:1 (5), b=:2 (1), c=:3 (1).
	p := poolOf(t, `{"nodes":{"127.0.0.1:1":5,"127.0.0.1:2":1,"127.0.0.1:3":1}}`)
	if got := picks(t, p, 7, ""); got != "aabacaa" {
		t.Fatalf("smooth 5:1:1: got %s; want aabacaa", got)
	}
	p = poolOf(t, `{"nodes":{"127.0.0.1:1":1,"127.0.0.1:2":0}}`)
	if got := picks(t, p, 3, ""); got != "aaa" {
		t.Fatalf("weight 0 picked: %s", got)
	}
}

func TestPickSkipsTriedAndDown(t *testing.T) {
	p := poolOf(t, `{"nodes":{"127.0.0.1:1":1,"127.0.0.1:2":1}}`)
	var tried Tried
	tried.Add(0)
	if i, err := p.Pick(nil, &tried); err != nil || i != 1 {
		t.Fatalf("with a tried: %d %v", i, err)
	}
	tried.Add(1)
	if _, err := p.Pick(nil, &tried); err != errNone {
		t.Fatalf("all tried: %v", err)
	}
	p.Nodes[0].down.Store(true)
	p.Nodes[1].down.Store(true)
	if _, err := p.Pick(nil, &Tried{}); err != ErrNoHealthy {
		t.Fatalf("all down: %v", err)
	}
}

func TestCHashSticky(t *testing.T) {
	p := poolOf(t, `{"type":"chash","hash_on":"header","key":"X-User","nodes":{"127.0.0.1:1":1,"127.0.0.1:2":1,"127.0.0.1:3":1}}`)
	counts := map[byte]int{}
	moved := 0
	for u := 0; u < 300; u++ {
		key := "user-" + string(rune('A'+u%26)) + string(rune('a'+u/26))
		first := picks(t, p, 1, key)
		if again := picks(t, p, 3, key); again != strings.Repeat(first, 3) {
			t.Fatalf("%s: %s then %s", key, first, again)
		}
		counts[first[0]]++
		// Removing node c moves only c's keys.
		p.Nodes[2].down.Store(true)
		if after := picks(t, p, 1, key); after != first && first != "c" {
			moved++
		}
		p.Nodes[2].down.Store(false)
	}
	if moved != 0 {
		t.Errorf("%d keys moved off a node that stayed up", moved)
	}
	for _, n := range []byte("abc") {
		if counts[n] < 60 {
			t.Errorf("node %c got %d of 300 keys: %v", n, counts[n], counts)
		}
	}
}

func TestLeastConnAndEWMA(t *testing.T) {
	p := poolOf(t, `{"type":"least_conn","nodes":{"127.0.0.1:1":1,"127.0.0.1:2":1}}`)
	p.Nodes[0].inflight.Store(3)
	if got := picks(t, p, 1, ""); got != "b" {
		t.Fatalf("least_conn: %s", got)
	}
	p = poolOf(t, `{"type":"ewma","nodes":{"127.0.0.1:1":1,"127.0.0.1:2":1}}`)
	p.Nodes[0].ewma.Store(mathBits(5e6))
	p.Nodes[1].ewma.Store(mathBits(1e6))
	if got := picks(t, p, 1, ""); got != "b" {
		t.Fatalf("ewma: %s", got)
	}
}

func TestPassiveHealth(t *testing.T) {
	p := poolOf(t, `{"nodes":{"127.0.0.1:1":1},"checks":{"active":{"http_path":"/h","healthy":{"interval":3600},"unhealthy":{"interval":3600}},
		"passive":{"unhealthy":{"http_statuses":[500],"http_failures":2},"healthy":{"successes":1}}}}`)
	n := p.Nodes[0]
	p.passive(n, 500, nil)
	if !n.Healthy() {
		t.Fatal("down after one failure of two")
	}
	p.passive(n, 200, nil)
	p.passive(n, 500, nil)
	if !n.Healthy() {
		t.Fatal("a success between failures did not reset the count")
	}
	p.passive(n, 500, nil)
	if n.Healthy() {
		t.Fatal("up after two consecutive failures")
	}
}

func TestNewRefuses(t *testing.T) {
	for _, body := range []string{
		`{"type":"chash","hash_on":"vars","key":"nope","nodes":{"127.0.0.1:1":1}}`,
		`{"scheme":"grpc","nodes":{"127.0.0.1:1":1}}`,
		`{"nodes":{"127.0.0.1:1":1},"checks":{"active":{"type":"udp"}}}`,
	} {
		if _, err := New(upstreamOf(t, body), nil, &admingw.Snapshot{}, Options{}); err == nil {
			t.Errorf("%s: built; want an error", body)
		}
	}
}

func mathBits(f float64) uint64 { return math.Float64bits(f) }

// TestHashKey: each chash hash_on reads its key, and a missing key falls
// back to the client address (as APISIX).
func TestHashKey(t *testing.T) {
	ctx := &fasthttp.RequestCtx{}
	ctx.Request.SetRequestURI("/p?user=u1&team=t9")
	ctx.Request.Header.Set("X-User", "hdr-user")
	ctx.Request.Header.Set("Cookie", "sid=c00kie")
	ctx.SetRemoteAddr(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5})
	vc := &vars.Context{ConsumerName: "jack"}
	clientIP := string(ctx.RemoteIP()) // the raw address bytes
	f := func(hashOn, key, want string, vc *vars.Context) {
		t.Helper()
		p := poolOf(t, `{"type":"chash","hash_on":"`+hashOn+`","key":"`+key+`","nodes":{"127.0.0.1:1":1,"127.0.0.1:2":1}}`)
		if got := string(p.HashKey(nil, ctx, vc)); got != want {
			t.Errorf("hash_on %s key %s: %q; want %q", hashOn, key, got, want)
		}
	}
	f("vars", "arg_user", "u1", vc)
	f("vars", "arg_none", clientIP, vc)
	f("header", "X-User", "hdr-user", vc)
	f("header", "X-None", clientIP, vc)
	f("cookie", "sid", "c00kie", vc)
	f("cookie", "nope", clientIP, vc)
	f("consumer", "", "jack", vc)
	f("consumer", "", clientIP, &vars.Context{})
	f("vars_combinations", "$arg_team-$arg_user", "t9-u1", vc)
	// A roundrobin pool has no hash key.
	if k := poolOf(t, `{"nodes":{"127.0.0.1:1":1}}`).HashKey(nil, ctx, vc); k != nil {
		t.Errorf("roundrobin hash key %q", k)
	}
}
