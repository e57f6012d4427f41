package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connBackend is a real HTTP server that counts the connections it
// accepts and closes (ConnState), adds a fixed latency when asked, and
// can hold a burst of requests until all of them have arrived.
type connBackend struct {
	name           string
	srv            *httptest.Server
	opened, closed atomic.Int64
	hits           atomic.Int64
	delay          time.Duration
	holdN          atomic.Int64  // requests to /hold still to wait for
	holdDone       chan struct{} // closed when the burst has arrived
	holdOnce       sync.Once
}

func newConnBackend(t *testing.T, name string, delay time.Duration) *connBackend {
	b := &connBackend{name: name, delay: delay, holdDone: make(chan struct{})}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		if r.URL.Path == "/hold" {
			if b.holdN.Add(-1) <= 0 {
				b.holdOnce.Do(func() { close(b.holdDone) })
			}
			select {
			case <-b.holdDone:
			case <-time.After(10 * time.Second): // never a deadlock, the test fails instead
			}
		}
		if b.delay > 0 {
			time.Sleep(b.delay) // the latency this backend simulates
		}
		fmt.Fprint(w, b.name)
	}))
	b.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			b.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			b.closed.Add(1)
		}
	}
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b
}

func (b *connBackend) addr() string { return b.srv.Listener.Addr().String() }

// load sends n requests to path from workers concurrent clients and
// counts the answers by body.
func (g *adminGW) load(t *testing.T, path string, workers, n int) map[string]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				code, body := g.get(t, "GET", path)
				if code != 200 {
					t.Errorf("GET %s: %d %s", path, code, body)
					return
				}
				mu.Lock()
				counts[body]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return counts
}

// TestGatewayPoolE2E: keepalive_pool limits seen by a backend counting its
// connections, and least_conn / ewma sending more of a concurrent load to
// the faster of two backends. (Roundrobin weights and chash stickiness
// are in TestGatewayE2E.)
func TestGatewayPoolE2E(t *testing.T) {
	g := startAdminGW(t, "--data-dir", t.TempDir())

	t.Run("keepalive requests", func(t *testing.T) {
		b := newConnBackend(t, "K", 0)
		g.want(t, 201, "PUT", "/routes/kreq", `{"uri":"/kreq","upstream":{"keepalive_pool":{"requests":3},"nodes":{"`+b.addr()+`":1}}}`)
		g.served(t, "/kreq", "K")
		for i := 0; i < 12; i++ {
			g.served(t, "/kreq", "K")
			// Sequential requests: a new connection every 3 of them.
			if hits, opened := b.hits.Load(), b.opened.Load(); opened != (hits+2)/3 {
				t.Fatalf("%d requests over %d connections; want %d (requests 3)", hits, opened, (hits+2)/3)
			}
		}
		// Each connection is closed after its third answer, not left idle.
		hits := b.hits.Load()
		waitFor(t, "spent connections closed", func() bool { return b.closed.Load() == hits/3 })
	})

	t.Run("keepalive size", func(t *testing.T) {
		const burst = 6
		b := newConnBackend(t, "S", 0)
		g.want(t, 201, "PUT", "/routes/ksize", `{"uri":"/*","hosts":["size.test"],"upstream":{"keepalive_pool":{"size":2},"nodes":{"`+b.addr()+`":1}}}`)
		g.served(t, "/warm", "S", "Host", "size.test")
		b.holdN.Store(burst)
		var wg sync.WaitGroup
		for i := 0; i < burst; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if code, body := g.get(t, "GET", "/hold", "Host", "size.test"); code != 200 {
					t.Errorf("burst request: %d %s", code, body)
				}
			}()
		}
		wg.Wait()
		if n := b.opened.Load(); n < burst {
			t.Fatalf("a burst of %d held requests used %d connections", burst, n)
		}
		// At most size (2) idle connections stay open at the backend;
		// idle_timeout is the default 60 s, so the others were closed by
		// the size limit.
		waitFor(t, "idle connections down to size", func() bool { return b.opened.Load()-b.closed.Load() == 2 })
		opened := b.opened.Load()
		for i := 0; i < 4; i++ {
			g.served(t, "/again", "S", "Host", "size.test")
		}
		if n := b.opened.Load(); n != opened {
			t.Fatalf("the 2 kept connections were not reused: %d opened, then %d", opened, n)
		}
	})

	t.Run("timeout read", func(t *testing.T) {
		// A fractional read timeout shorter than the backend's latency
		// is a 504; a longer one is served.
		lazy := newConnBackend(t, "lazy", 400*time.Millisecond)
		g.want(t, 201, "PUT", "/routes/tmo", `{"uri":"/tmo","upstream":{"timeout":{"connect":1,"send":1,"read":0.1},"nodes":{"`+lazy.addr()+`":1}}}`)
		waitFor(t, "504 on a 0.1 s read timeout", func() bool {
			code, body := g.get(t, "GET", "/tmo")
			return code == 504 && body == `{"error_msg":"504 Gateway Timeout"}`
		})
		g.want(t, 200, "PUT", "/routes/tmo", `{"uri":"/tmo","upstream":{"timeout":{"connect":1,"send":1,"read":2.5},"nodes":{"`+lazy.addr()+`":1}}}`)
		g.served(t, "/tmo", "lazy")
	})

	t.Run("https upstream", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "tls %s %s", r.Proto, r.TLS.ServerName)
		}))
		t.Cleanup(srv.Close)
		addr := srv.Listener.Addr().String()
		// tls.verify defaults to false (as APISIX): a self-signed
		// certificate is accepted; keepalive_pool applies over TLS too.
		g.want(t, 201, "PUT", "/routes/tls", `{"uri":"/tls","upstream":{"scheme":"https","pass_host":"rewrite","upstream_host":"example.com","keepalive_pool":{"requests":2},"nodes":{"`+addr+`":1}}}`)
		g.served(t, "/tls", "tls HTTP/1.1 example.com")
		// verify true without the issuer in ca_certs: refused, 502.
		g.want(t, 201, "PUT", "/routes/tlsv", `{"uri":"/tlsv","upstream":{"scheme":"https","tls":{"verify":true},"nodes":{"`+addr+`":1}}}`)
		waitFor(t, "502 on an unverified certificate", func() bool { code, _ := g.get(t, "GET", "/tlsv"); return code == 502 })
	})

	t.Run("uris", func(t *testing.T) {
		b := newConnBackend(t, "U", 0)
		g.want(t, 201, "PUT", "/routes/uris", `{"uris":["/u/one","/u/many/*"],"upstream":{"nodes":{"`+b.addr()+`":1}}}`)
		g.served(t, "/u/one", "U")
		g.served(t, "/u/many/x/y", "U")
		if code, _ := g.get(t, "GET", "/u/two"); code != 404 {
			t.Errorf("/u/two: %d; want 404", code)
		}
	})

	// One fast and one slow (100 ms) backend under 8 concurrent clients:
	// both balancers must send clearly more to the fast one. Equal
	// weights; roundrobin would split 1:1.
	fast, slow := newConnBackend(t, "fast", 0), newConnBackend(t, "slow", 100*time.Millisecond)
	for _, typ := range []string{"least_conn", "ewma"} {
		t.Run(typ, func(t *testing.T) {
			path := "/" + typ
			g.want(t, 201, "PUT", "/routes/"+typ, `{"uri":"`+path+`","upstream":{"type":"`+typ+`","nodes":{"`+slow.addr()+`":1,"`+fast.addr()+`":1}}}`)
			g.served(t, path, "")
			counts := g.load(t, path, 8, 160)
			if counts["fast"]+counts["slow"] != 160 {
				t.Fatalf("answers: %v", counts)
			}
			if counts["fast"] < 3*counts["slow"] {
				t.Fatalf("%s with a 100 ms slower node: %v; want the fast node to take over 3x the slow one's", typ, counts)
			}
			t.Logf("%s: %v", typ, counts)
		})
	}
}
