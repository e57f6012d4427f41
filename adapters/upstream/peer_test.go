package upstream

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

// serveRaw answers one request on a loopback listener with raw bytes, then
// either closes the connection or keeps it open.
func serveRaw(t *testing.T, answer string, closeAfter bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		r := bufio.NewReader(c)
		for { // read the request head
			line, err := r.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		c.Write([]byte(answer))
		if closeAfter {
			c.Close()
			return
		}
		io.Copy(io.Discard, c) // keep-alive: hold the connection open
	}()
	return "http://" + ln.Addr().String()
}

// TestPeerClosedTellsCutFromEnd: a chunked body cut off between chunks is
// never taken for a real end. fasthttp up to v1.74 reported the cut as a
// clean io.EOF, which PeerClosed tells from a real end; later versions
// report io.ErrUnexpectedEOF themselves. Either signal is enough for the
// relays (edge/stream.go), which check both.
func TestPeerClosedTellsCutFromEnd(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
	f := func(answer string, closeAfter, wantClosed bool) {
		t.Helper()
		base := serveRaw(t, answer, closeAfter)
		p := NewPool(Options{})
		c, err := p.Client(Target{BaseURL: base, TLS: TLS{Verify: true}})
		if err != nil {
			t.Fatal(err)
		}
		req := fasthttp.AcquireRequest()
		req.SetRequestURI(base + "/x")
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseResponse(resp)
		if err := c.DoStream(req, resp, 0); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.BodyStream())
		if string(b) != "hello" || (err != nil && !errors.Is(err, io.ErrUnexpectedEOF)) {
			t.Fatalf("body %q err %v", b, err)
		}
		if got := err != nil || PeerClosed(resp); got != wantClosed {
			t.Fatalf("cut seen = %v (err %v, PeerClosed %v); want %v", got, err, PeerClosed(resp), wantClosed)
		}
		resp.CloseBodyStream()
	}
	f(head, true, true)               // cut after one chunk
	f(head+"0\r\n\r\n", false, false) // a real end on a kept-alive connection
}
