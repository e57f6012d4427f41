package gateway

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"
)

// wsEcho is a real WebSocket server (fasthttp/websocket, the gorilla
// implementation) echoing every message prefixed with its name.
func wsEcho(t testing.TB, name string) string {
	t.Helper()
	up := websocket.Upgrader{Subprotocols: []string{"chat"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.WriteMessage(websocket.TextMessage, []byte(name+" hello "+r.Header.Get("X-Forwarded-For")))
		for {
			typ, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(typ, append([]byte(name+":"), msg...)); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// serveGW serves g's handler on a loopback listener.
func serveGW(t testing.TB, g *Gateway) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: g.Handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

func TestWebSocketProxy(t *testing.T) {
	a, b := wsEcho(t, "A"), wsEcho(t, "B")
	plain := backend(t)
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	g := newGW(t, map[string]string{
		"ws":    `{"uri":"/ws","enable_websocket":true,"upstream":{"nodes":{"` + a + `":1,"` + b + `":1}}}`,
		"retry": `{"uri":"/retry","enable_websocket":true,"upstream":{"timeout":{"connect":0.5,"send":1,"read":1},"nodes":[{"host":"127.0.0.1","port":` + deadAddr[strings.LastIndexByte(deadAddr, ':')+1:] + `,"weight":100},{"host":"127.0.0.1","port":` + a[strings.LastIndexByte(a, ':')+1:] + `,"weight":1}]}}`,
		"plain": `{"uri":"/plain","enable_websocket":true,"upstream":{"nodes":{"` + plain + `":1}}}`,
		"idle":  `{"uri":"/idle","enable_websocket":true,"upstream":{"timeout":{"read":0.3},"nodes":{"` + a + `":1}}}`,
	})
	gw := serveGW(t, g)
	dial := func(t *testing.T, path string, protos ...string) (*websocket.Conn, *http.Response, error) {
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second, Subprotocols: protos}
		c, resp, err := d.Dial("ws://"+gw+path, nil)
		if c != nil {
			t.Cleanup(func() { c.Close() })
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		}
		return c, resp, err
	}

	t.Run("echo both nodes", func(t *testing.T) {
		seen := map[string]bool{}
		for i := 0; i < 4; i++ {
			c, resp, err := dial(t, "/ws?x=1", "chat")
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			if resp.Header.Get("Sec-WebSocket-Protocol") != "chat" {
				t.Errorf("subprotocol %q", resp.Header.Get("Sec-WebSocket-Protocol"))
			}
			_, hello, err := c.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			name := string(hello[:1])
			seen[name] = true
			if !strings.HasSuffix(string(hello), " hello 127.0.0.1") {
				t.Errorf("hello %q: want the client IP in X-Forwarded-For", hello)
			}
			for j := 0; j < 3; j++ {
				msg := strings.Repeat("m", 1+j*40000)
				if err := c.WriteMessage(websocket.BinaryMessage, []byte(msg)); err != nil {
					t.Fatal(err)
				}
				_, got, err := c.ReadMessage()
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != name+":"+msg {
					t.Fatalf("echo of %d bytes: got %d bytes", len(msg), len(got))
				}
			}
			// The close handshake goes through the relay: the node's
			// close frame comes back.
			if err := c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				t.Errorf("after close: %v; want the node's normal closure", err)
			}
		}
		if !seen["A"] || !seen["B"] {
			t.Errorf("roundrobin over two nodes reached %v", seen)
		}
	})

	t.Run("retry past a dead node", func(t *testing.T) {
		c, _, err := dial(t, "/retry")
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if _, hello, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(hello), "A hello") {
			t.Fatalf("hello %q %v", hello, err)
		}
	})

	t.Run("node refusing the upgrade", func(t *testing.T) {
		_, resp, err := dial(t, "/plain")
		if err == nil || resp == nil || resp.StatusCode != 200 {
			t.Fatalf("want the node's 200 relayed and the dial refused; got %v %v", resp, err)
		}
	})

	t.Run("idle timeout", func(t *testing.T) {
		c, _, err := dial(t, "/idle")
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if _, _, err := c.ReadMessage(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, _, err := c.ReadMessage(); err == nil {
			t.Fatal("read after idle timeout succeeded")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("idle session closed after %v; want ~0.3 s", d)
		}
	})
}

func TestReadUpgradeResponse(t *testing.T) {
	for _, tc := range []struct {
		in     string
		status int
		ok     bool
	}{
		{"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nFRAME", 101, true},
		{"HTTP/1.0 404\r\n\r\n", 404, true},
		{"HTTP/1.1 200 OK\nA: b\n\n", 200, true},
		{"HTTP/2 101 x\r\n\r\n", 0, false},
		{"HTTP/1.1 1x1 x\r\n\r\n", 0, false},
		{"HTTP/1.1 101 x\r\nA: b\r\n", 0, false},
		{"HTTP/1.1 1011 x\r\n\r\n", 0, false},
		{"HTTP/1.1 101 x\r\n" + strings.Repeat("A: b\r\n", 4000) + "\r\n", 0, false},
	} {
		br := bufio.NewReaderSize(strings.NewReader(tc.in), 16) // lines longer than the buffer
		head, status, err := ReadUpgradeResponse(br, maxUpgradeHead)
		if (err == nil) != tc.ok || status != tc.status {
			t.Errorf("%.30q: status %d err %v; want %d ok=%v", tc.in, status, err, tc.status, tc.ok)
			continue
		}
		if tc.ok && !strings.HasPrefix(tc.in, string(head)) {
			t.Errorf("%.30q: head %q is not the input's prefix", tc.in, head)
		}
	}
}

func TestHasToken(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{{"websocket", true}, {"WebSocket", true}, {"h2c, websocket", true}, {"websockets", false}, {"", false}, {"web socket", false}} {
		if hasToken([]byte(tc.v), "websocket") != tc.ok {
			t.Errorf("%q: want %v", tc.v, tc.ok)
		}
	}
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return a, <-ch
}

// BenchmarkWebSocketRelay: one 128-byte masked frame from client to node
// and its echo back, through Relay over loopback TCP (the relay itself
// must not allocate per frame).
func BenchmarkWebSocketRelay(b *testing.B) {
	client, gwSide := tcpPair(b)
	gwUp, node := tcpPair(b)
	go Relay(gwSide, gwUp, time.Minute, time.Minute)
	defer client.Close()
	defer node.Close()
	frame := make([]byte, 128)
	frame[0], frame[1] = 0x82, 0x80|122
	go func() {
		buf := make([]byte, len(frame))
		for {
			if _, err := io.ReadFull(node, buf); err != nil {
				return
			}
			if _, err := node.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, len(frame))
	b.ReportAllocs()
	b.SetBytes(int64(2 * len(frame)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := client.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(client, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRelayAllocs guards the relay's zero allocations per frame.
func TestRelayAllocs(t *testing.T) {
	client, gwSide := tcpPair(t)
	gwUp, node := tcpPair(t)
	go Relay(gwSide, gwUp, time.Minute, time.Minute)
	defer client.Close()
	defer node.Close()
	frame := []byte{0x82, 0x03, 'a', 'b', 'c'}
	buf := make([]byte, len(frame))
	round := func() {
		if _, err := client.Write(frame); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(node, buf); err != nil {
			t.Fatal(err)
		}
	}
	round()
	if n := testing.AllocsPerRun(200, round); n > 0 {
		t.Errorf("%.1f allocs per relayed frame; want 0", n)
	}
}
