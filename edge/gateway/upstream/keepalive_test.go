package upstream

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// connCounter is a real backend that counts the connections it accepts
// and closes, and can hold requests until released.
type connCounter struct {
	srv            *httptest.Server
	opened, closed atomic.Int64
	hold           chan struct{} // nil: answer at once
	holding        atomic.Int64  // requests still to hold
	arrived        sync.WaitGroup
}

func newConnCounter(t *testing.T, tls bool, hold int) *connCounter {
	c := &connCounter{}
	if hold > 0 {
		c.hold = make(chan struct{})
		c.holding.Store(int64(hold))
		c.arrived.Add(hold)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.holding.Add(-1) >= 0 {
			c.arrived.Done()
			<-c.hold
		}
		w.Write([]byte("ok"))
	})
	c.srv = httptest.NewUnstartedServer(h)
	c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			c.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			c.closed.Add(1)
		}
	}
	if tls {
		c.srv.StartTLS()
	} else {
		c.srv.Start()
	}
	t.Cleanup(c.srv.Close)
	return c
}

func (c *connCounter) addr() string { return c.srv.Listener.Addr().String() }

// waitClosed polls until the backend has seen want connections closed.
func (c *connCounter) waitClosed(t *testing.T, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.closed.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("backend saw %d connections closed; want %d", c.closed.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func doOK(t *testing.T, p *Pool) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("/x")
	req.Header.SetHost("backend")
	if err := p.Do(0, req, resp); err != nil || resp.StatusCode() != 200 || string(resp.Body()) != "ok" {
		t.Fatalf("request: %v %d %q", err, resp.StatusCode(), resp.Body())
	}
}

func TestKeepaliveRequests(t *testing.T) {
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			b := newConnCounter(t, scheme == "https", 0)
			p := poolOf(t, `{"scheme":"`+scheme+`","keepalive_pool":{"requests":3},"nodes":{"`+b.addr()+`":1}}`)
			for i := 1; i <= 9; i++ {
				doOK(t, p)
				// A new connection every 3 requests, closed after its third.
				if got, want := b.opened.Load(), int64((i+2)/3); got != want {
					t.Fatalf("after %d requests: %d connections; want %d", i, got, want)
				}
			}
			b.waitClosed(t, 3)
		})
	}
}

func TestKeepaliveDefaultsReuse(t *testing.T) {
	b := newConnCounter(t, false, 0)
	p := poolOf(t, `{"nodes":{"`+b.addr()+`":1}}`)
	for i := 0; i < 20; i++ {
		doOK(t, p)
	}
	if n := b.opened.Load(); n != 1 {
		t.Fatalf("20 sequential requests with the default pool: %d connections; want 1", n)
	}
}

func TestKeepaliveSize(t *testing.T) {
	const conc = 6
	b := newConnCounter(t, false, conc)
	p := poolOf(t, `{"keepalive_pool":{"size":2},"nodes":{"`+b.addr()+`":1}}`)
	var wg sync.WaitGroup
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); doOK(t, p) }()
	}
	b.arrived.Wait() // every request holds its own connection
	close(b.hold)
	wg.Wait()
	if n := b.opened.Load(); n != conc {
		t.Fatalf("%d concurrent requests opened %d connections", conc, n)
	}
	if n := p.Nodes[0].client.IdleConnsCount(); n != 2 {
		t.Fatalf("%d idle connections kept; want size 2", n)
	}
	b.waitClosed(t, conc-2)
	// The two kept connections serve the next requests.
	for i := 0; i < 4; i++ {
		doOK(t, p)
	}
	if n := b.opened.Load(); n != conc {
		t.Fatalf("kept connections not reused: %d opened", n)
	}
}

func TestKeepaliveIdleTimeout(t *testing.T) {
	b := newConnCounter(t, false, 0)
	p := poolOf(t, `{"keepalive_pool":{"idle_timeout":0.2},"nodes":{"`+b.addr()+`":1}}`)
	doOK(t, p)
	b.waitClosed(t, 1) // closed by the idle cleaner, within 5 s
	if n := p.Nodes[0].client.IdleConnsCount(); n != 0 {
		t.Fatalf("%d idle connections after idle_timeout", n)
	}

	// idle_timeout 0: nothing is kept.
	b0 := newConnCounter(t, false, 0)
	p0 := poolOf(t, `{"keepalive_pool":{"idle_timeout":0},"nodes":{"`+b0.addr()+`":1}}`)
	for i := 0; i < 3; i++ {
		doOK(t, p0)
	}
	if n := b0.opened.Load(); n != 3 {
		t.Fatalf("idle_timeout 0: %d connections for 3 requests; want 3", n)
	}
}

func TestKeepaliveRefused(t *testing.T) {
	for _, kp := range []string{`{"size":0}`, `{"requests":-1}`, `{"idle_timeout":-1}`, `{"size":"x"}`} {
		_, err := parseKeepalive([]byte(kp))
		if err == nil || !strings.Contains(err.Error(), "keepalive_pool") {
			t.Errorf("%s: %v; want an error", kp, err)
		}
	}
}

// BenchmarkPoolDo is one proxied request through a node's client and the
// keepalive transport on a kept connection: 0 allocs.
func BenchmarkPoolDo(b *testing.B) {
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.WriteString("ok") }}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown()
	p := poolOf(b, `{"nodes":{"`+ln.Addr().String()+`":1}}`)
	var req fasthttp.Request
	var resp fasthttp.Response
	req.SetRequestURI("/x")
	req.Header.SetHost("backend")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.Do(0, &req, &resp); err != nil {
			b.Fatal(err)
		}
	}
}
