package edge

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// startBodyServer serves readBody on a streaming listener, as NewServer
// configures it: the handler answers the body's length and first bytes.
func startBodyServer(t *testing.T, limit int64) string {
	t.Helper()
	srv := &fasthttp.Server{
		Logger:            &bodyServerLog,
		StreamRequestBody: true, DisablePreParseMultipartForm: true, MaxRequestBodySize: int(limit),
		Handler: func(ctx *fasthttp.RequestCtx) {
			if !readBody(ctx, limit) {
				return
			}
			body := ctx.PostBody()
			ctx.SetBodyString(strconv.Itoa(len(body)) + ":" + string(body[:min(len(body), 8)]))
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// countLog counts the HTTP library's log lines.
type countLog struct{ n atomic.Int64 }

func (l *countLog) Printf(string, ...any) { l.n.Add(1) }

// bodyServerLog is the log of every startBodyServer: readBody must never
// make fasthttp log (Request.Body() on a streamed body logs a warning per
// call since v1.78).
var bodyServerLog countLog

// onlyReader hides bytes.Reader's length so net/http sends it chunked.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestReadBody: the listener streams bodies; readBody gives every non-upload
// request its whole body under the limit — prefetched with the headers,
// read on, or chunked — and answers 413 (closing the connection) over it.
func TestReadBody(t *testing.T) {
	const limit = 256 << 10
	base := startBodyServer(t, limit)
	client := &http.Client{Timeout: 10 * time.Second}
	body := func(n int) []byte { return bytes.Repeat([]byte("abcdefgh"), n/8) }
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		status  int
	}{
		{"empty", 0, false, 200},
		{"prefetched", 4 << 10, false, 200},
		{"at the prefetch size (fasthttp reads 8 KiB with the headers)", 8 << 10, false, 200},
		{"read on", 100 << 10, false, 200},
		{"at the limit", limit, false, 200},
		{"over the limit", limit + 8, false, 413},
		{"chunked", 100 << 10, true, 200},
		{"chunked over the limit", limit + 64<<10, true, 413},
	} {
		var r io.Reader = bytes.NewReader(body(tc.size))
		if tc.chunked {
			r = onlyReader{r}
		}
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", r)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("%s: %d %s; want %d", tc.name, resp.StatusCode, got, tc.status)
		}
		if tc.status == 200 {
			want := strconv.Itoa(tc.size) + ":" + string(body(tc.size)[:min(tc.size, 8)])
			if string(got) != want {
				t.Fatalf("%s: handler saw %q; want %q", tc.name, got, want)
			}
		} else if !resp.Close || !strings.Contains(string(got), "request_too_large") {
			t.Fatalf("%s: %s, close %v; want request_too_large and a closed connection", tc.name, got, resp.Close)
		}
	}
	if n := bodyServerLog.n.Load(); n != 0 {
		t.Fatalf("the HTTP library logged %d lines (Request.Body() on a streamed body?)", n)
	}
}

// TestReadBodyKeepAlive: requests whose bodies are read on (not prefetched)
// share one connection without their bytes leaking into the next request.
func TestReadBodyKeepAlive(t *testing.T) {
	base := startBodyServer(t, 1<<20)
	addr := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var raw strings.Builder
	for i := 0; i < 3; i++ {
		b := strings.Repeat(strconv.Itoa(i), 20<<10)
		raw.WriteString("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: " + strconv.Itoa(len(b)) + "\r\n\r\n" + b)
	}
	if _, err := conn.Write([]byte(raw.String())); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte("20480:22222222")) {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	for i := 0; i < 3; i++ {
		if want := "20480:" + strings.Repeat(strconv.Itoa(i), 8); !bytes.Contains(got, []byte(want)) {
			t.Fatalf("pipelined request %d: %q missing from\n%s", i, want, got)
		}
	}
}

// TestReadBodyTruncated: a body that ends before its Content-Length is 400
// and the connection closed, not a short body handed to the handler.
func TestReadBodyTruncated(t *testing.T) {
	base := startBodyServer(t, 1<<20)
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 20000\r\n\r\n" + strings.Repeat("y", 10000)))
	conn.(*net.TCPConn).CloseWrite()
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	out, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(out), "HTTP/1.1 400") || !strings.Contains(string(out), "ended before its Content-Length") {
		t.Fatalf("truncated body: %s", out)
	}
}

// TestReadBodyTimeout: a body slower than the body deadline is 408, known
// length or chunked, as when the listener read bodies itself.
func TestReadBodyTimeout(t *testing.T) {
	srv := &fasthttp.Server{
		StreamRequestBody: true, ReadTimeout: 300 * time.Millisecond,
		Handler: func(ctx *fasthttp.RequestCtx) {
			if readBody(ctx, 1<<20) {
				ctx.SetBodyString("read")
			}
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck
	defer srv.Shutdown()
	for _, head := range []string{"Content-Length: 20000", "Transfer-Encoding: chunked"} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		body := strings.Repeat("z", 10000)
		if head[0] == 'T' {
			body = "2710\r\n" + body + "\r\n"
		}
		conn.Write([]byte("POST /x HTTP/1.1\r\nHost: a\r\n" + head + "\r\n\r\n" + body)) // and then nothing
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		out, _ := io.ReadAll(conn)
		conn.Close()
		if !strings.HasPrefix(string(out), "HTTP/1.1 408") || !strings.Contains(string(out), "request_timeout") {
			t.Fatalf("%s, stalled body: %s", head, out)
		}
	}
}
