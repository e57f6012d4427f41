package edge

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer collects log output written from the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startEdge serves the proxy on a loopback port with the given limits and
// returns its address and log.
func startEdge(t *testing.T, lim Limits) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	srv := NewServer(nil, proxyFor(t, startMock(t)), false, lim, log)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { _ = srv.Shutdown(2 * time.Second) })
	return ln.Addr().String(), logs
}

// exchange writes raw to a new connection and reads until the server
// closes it (or the deadline passes). closed reports a close by the server.
func exchange(t *testing.T, addr, raw string) (out string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(conn)
	return string(b), err == nil
}

// testLimits are the startup defaults.
func testLimits() Limits {
	return Limits{MaxBodyBytes: 32 << 20, HeaderTimeout: 10 * time.Second, BodyTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
}

const secretKey = "sk-framing-secret-0123456789"

// TestRequestFraming: every ambiguous or broken framing gets one 400 and a
// closed connection; nothing after it is served as another request; and
// the caller key in those requests never reaches the log.
func TestRequestFraming(t *testing.T) {
	addr, logs := startEdge(t, testLimits())
	auth := "Authorization: Bearer " + secretKey + "\r\n"
	smuggled := "GET /v1/models HTTP/1.1\r\nHost: gw\r\n" + auth + "\r\n"
	f := func(name, raw string, wantStatus string) {
		t.Helper()
		out, closed := exchange(t, addr, raw)
		if n := strings.Count(out, "HTTP/1.1 "); n != 1 {
			t.Fatalf("%s: %d responses; want exactly 1:\n%s", name, n, out)
		}
		if !strings.HasPrefix(out, "HTTP/1.1 "+wantStatus) {
			t.Fatalf("%s: got\n%s\nwant status %s", name, out, wantStatus)
		}
		if wantStatus == "400" && !closed {
			t.Fatalf("%s: connection left open after 400", name)
		}
		if strings.Contains(out, secretKey) {
			t.Fatalf("%s: response echoes the key", name)
		}
	}
	post := "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n" + auth
	f("CL+TE", post+"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+smuggled, "400")
	f("TE+CL", post+"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"+smuggled, "400")
	f("cl+te lower case", post+"content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"+smuggled, "400")
	f("CL+TE mixed case", post+"CoNtEnT-LeNgTh: 5\r\ntRaNsFeR-EnCoDiNg: chunked\r\n\r\n0\r\n\r\n"+smuggled, "400")
	f("TE gzip, chunked", post+"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"+smuggled, "400")
	f("TE identity + CL", post+"Transfer-Encoding: identity\r\nContent-Length: 2\r\n\r\n{}"+smuggled, "400")
	f("TE twice", post+"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+smuggled, "400")
	f("duplicate CL", post+"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"+smuggled, "400")
	f("CL list", post+"Content-Length: 2, 2\r\n\r\n{}"+smuggled, "400")
	f("CL negative", post+"Content-Length: -1\r\n\r\n"+smuggled, "400")
	f("space before colon", post+"Content-Length : 2\r\n\r\n{}"+smuggled, "400")
	f("obs-fold", post+"X-Folded: a\r\n  b\r\nContent-Length: 2\r\n\r\n{}"+smuggled, "400")
	f("bad chunk size", post+"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"+smuggled, "400")
	f("huge chunk size", post+"Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n{}\r\n0\r\n\r\n"+smuggled, "400")
	f("chunk without CRLF", post+"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n"+smuggled, "400")
	f("HTTP/1.0 with TE", "POST /v1/chat/completions HTTP/1.0\r\nHost: gw\r\n"+auth+"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400")
	// A well-formed chunked request is served (401: the body is fine, the
	// key is not a caller key) and keeps its connection.
	out, _ := exchange(t, addr, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer nope\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 401") {
		t.Fatalf("valid chunked request: %s", out)
	}
	time.Sleep(50 * time.Millisecond) // the library logs after closing
	if !strings.Contains(logs.String(), "http_server") {
		t.Fatalf("the library's error lines do not reach gw's log:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "framing-secret") {
		t.Fatalf("caller key in the log:\n%s", logs.String())
	}
}

// TestBadFraming checks the header-block rule itself.
func TestBadFraming(t *testing.T) {
	f := func(raw string, want bool) {
		t.Helper()
		if got := BadFraming([]byte(raw)); got != want {
			t.Fatalf("%q: %v; want %v", raw, got, want)
		}
	}
	f("Host: a\r\nContent-Length: 5\r\n", false)
	f("Host: a\r\nTransfer-Encoding: chunked\r\n", false)
	f("Host: a\r\nTransfer-Encoding:  CHUNKED \r\n", false)
	f("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", true)
	f("TRANSFER-ENCODING: chunked\r\nCONTENT-LENGTH: 5\r\n", true)
	f("tRaNsFeR-eNcOdInG: chunked\r\ncontent-length: 5\r\n", true)
	f("Transfer-Encoding: gzip\r\n", true)
	f("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", true)
	f("X-Transfer-Encoding-Note: gzip\r\n", false)
	f("", false)
}

func TestBadFramingObsFold(t *testing.T) {
	for _, raw := range []string{"X-A: a\r\n b\r\n", "X-A: a\r\n\tb\r\n", " X-A: a\r\n"} {
		if !BadFraming([]byte(raw)) {
			t.Fatalf("%q: obs-fold not rejected", raw)
		}
	}
}

// TestHeaderTimeout: a client that trickles its headers gets 408 and a
// closed connection after server.header_timeout.
func TestHeaderTimeout(t *testing.T) {
	lim := testLimits()
	lim.HeaderTimeout = 300 * time.Millisecond
	addr, _ := startEdge(t, lim)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	for _, b := range []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n") {
		if _, err := conn.Write([]byte{b}); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	out, err := io.ReadAll(conn)
	if err != nil || !strings.HasPrefix(string(out), "HTTP/1.1 408") || !strings.Contains(string(out), "request_timeout") {
		t.Fatalf("got %q, %v; want 408 request_timeout and a close", out, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("closed after %v", d)
	}
}

// BenchmarkBadFraming: the framing check every request pays (no
// Transfer-Encoding, the common case).
func BenchmarkBadFraming(b *testing.B) {
	raw := []byte("Host: gw.example\r\nUser-Agent: OpenAI/Python 1.50.0\r\nContent-Type: application/json\r\nContent-Length: 1200\r\n" +
		"Authorization: Bearer sk-0123456789\r\nX-Stainless-Lang: python\r\nX-Stainless-Runtime-Version: 3.12.1\r\nAccept: application/json\r\n")
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if BadFraming(raw) {
			b.Fatal("flagged")
		}
	}
}

func TestBadFramingEdges(t *testing.T) {
	for _, raw := range []string{"\n", "\n\n", "\r\n", "t", "c", "Transfer-Encoding", "Transfer-Encoding:", "te\n"} {
		_ = BadFraming([]byte(raw)) // must not panic
	}
	if !BadFraming([]byte("Transfer-Encoding:\r\n")) {
		t.Fatal("an empty Transfer-Encoding is not chunked")
	}
}
