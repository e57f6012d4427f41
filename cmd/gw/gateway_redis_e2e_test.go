package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"gw/limiter/redistest"
)

// limitGet sends one data-plane request and returns the status and the
// X-RateLimit-Remaining / -Reset headers.
func limitGet(t *testing.T, g *adminGW, path string) (code int, remaining string, reset int) {
	t.Helper()
	resp, err := http.Get(g.gateway + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	reset, _ = strconv.Atoi(resp.Header.Get("X-RateLimit-Reset"))
	return resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining"), reset
}

// TestGatewayRedisE2E: two gw processes share limit-count counters through
// a real 3-primary Redis Cluster (policy redis-cluster) and through a Redis
// with a 2 s window (policy redis); a Redis outage answers 500 as APISIX.
func TestGatewayRedisE2E(t *testing.T) {
	cl := redistest.StartCluster(t)
	srv := redistest.Start(t)
	be := newBackend(t, "A")
	nodes, _ := json.Marshal(cl.Addrs())
	host, port, _ := net.SplitHostPort(srv.Addr())
	up := `"upstream":{"nodes":{"` + be.addr() + `":1}}`
	procs := []*adminGW{startAdminGW(t, "--data-dir", t.TempDir()), startAdminGW(t, "--data-dir", t.TempDir())}
	for _, g := range procs {
		// The same configuration written to each process: the same counters.
		g.want(t, 201, "PUT", "/routes/cluster", `{"uri":"/cluster",`+up+`,"plugins":{"limit-count":{"count":10,"time_window":3600,"rejected_code":429,"key_type":"constant","key":"all","policy":"redis-cluster","redis_cluster_nodes":`+string(nodes)+`,"redis_cluster_name":"e2e"}}}`)
		g.want(t, 201, "PUT", "/routes/window", `{"uri":"/window",`+up+`,"plugins":{"limit-count":{"count":2,"time_window":2,"rejected_code":429,"policy":"redis","redis_host":"`+host+`","redis_port":`+port+`,"redis_timeout":300}}}`)
		g.want(t, 201, "PUT", "/routes/ready", `{"uri":"/ready",`+up+`}`)
		g.served(t, "/ready", "A GET") // routes apply in order: the limits are in
	}

	t.Run("cluster", func(t *testing.T) {
		var mu sync.Mutex
		codes := map[int]int{}
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func(g *adminGW) {
				defer wg.Done()
				code, _, _ := limitGet(t, g, "/cluster")
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}(procs[i%2])
		}
		wg.Wait()
		if codes[200] != 10 || codes[429] != 6 {
			t.Fatalf("answers %v across two processes; want exactly 10×200 and 6×429", codes)
		}
	})

	t.Run("window 2s", func(t *testing.T) {
		for time.Now().UnixMilli()%2000 > 1000 { // start in a window's first second
			time.Sleep(10 * time.Millisecond)
		}
		for i, want := range []int{200, 200, 429} {
			code, rem, reset := limitGet(t, procs[i%2], "/window")
			if code != want || reset < 1 || reset > 2 {
				t.Fatalf("request %d: %d remaining %s reset %d; want %d with reset in [1,2]", i, code, rem, reset, want)
			}
		}
		waitFor(t, "the next 2 s window", func() bool {
			code, _, _ := limitGet(t, procs[1], "/window")
			return code == 200
		})
	})

	t.Run("redis down", func(t *testing.T) {
		srv.Kill()
		for _, g := range procs {
			if code, rem, _ := limitGet(t, g, "/window"); code != 500 || rem != "" {
				t.Fatalf("with Redis down: %d remaining %q; want 500 without limit headers", code, rem)
			}
		}
	})
}
