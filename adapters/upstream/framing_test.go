package upstream

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"gw/edge/rawsock"
)

func TestRequestLeft(t *testing.T) {
	tests := []struct {
		name string
		p    string
		want int
	}{
		{"no body", "GET /v1/models HTTP/1.1\r\nHost: a\r\n\r\n", 0},
		{"whole body", "POST /v1/chat HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello", 0},
		{"lower-case name", "POST / HTTP/1.1\r\ncontent-length: 5\r\n\r\nhel", 2},
		{"body to come", "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nhello", 5},
		{"headers only", "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n", 10},
		{"chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", -1},
		{"chunked lower", "POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n", -1},
		{"headers cut", "POST / HTTP/1.1\r\nContent-Length: 10\r\n", -1},
		{"not a request line", "hello\r\n\r\n", -1},
		{"body longer than length", "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nhello", -1},
		{"bytes after a bodiless request", "GET / HTTP/1.1\r\n\r\nxx", -1},
		{"bad length", "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", -1},
		{"huge length", "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", -1},
		{"empty", "", -1},
		{"bare LF line end", "POST / HTTP/1.1\nContent-Length: 5\n\nhello", -1},
		{"spaces around the length", "POST / HTTP/1.1\r\nContent-Length:  5 \r\n\r\nhel", 2},
		{"two equal lengths", "POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\nhello", 0},
		{"two different lengths", "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", -1},
		{"length in a value only", "POST / HTTP/1.1\r\nX-Note: Content-Length: 9\r\n\r\n", 0},
		{"empty length", "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", -1},
	}
	for _, tt := range tests {
		if got := RequestLeft([]byte(tt.p)); got != tt.want {
			t.Errorf("%s: RequestLeft = %d; want %d", tt.name, got, tt.want)
		}
	}
}

// TestWholeRequestLeavesWithTheRead: on a raw socket the write completing
// a request is sent by the read of its answer; a request whose body is
// still to come leaves at once, so an upstream answering early (or a body
// streamed from the caller) never waits on it.
func TestWholeRequestLeavesWithTheRead(t *testing.T) {
	if !rawsock.Supported {
		t.Skip("raw sockets are not used here")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() { s, _ := ln.Accept(); acc <- s }()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := newConn(raw)
	defer c.Close()
	s := <-acc
	defer s.Close()

	arrives := func() bool { // whether the server gets bytes within 50 ms
		s.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, _ := s.Read(make([]byte, 4096))
		return n > 0
	}
	// A body still to come leaves at once; its last piece is held.
	c.Write([]byte("POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nab"))
	if !arrives() {
		t.Fatal("the first part of an unfinished request was held")
	}
	c.Write([]byte("cd"))
	if arrives() {
		t.Fatal("the write completing the request left before the read")
	}
	go func() {
		buf := make([]byte, 64)
		s.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := s.Read(buf)
		if string(buf[:n]) == "cd" {
			s.Write([]byte("answer"))
		}
	}()
	buf := make([]byte, 16)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.ReadFull(c, buf[:6]); err != nil || string(buf[:n]) != "answer" {
		t.Fatalf("read: %q, %v; want the answer to the held request", buf[:n], err)
	}
	// A chunked request is never held.
	c.Write([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"))
	if !arrives() {
		t.Fatal("a chunked request was held")
	}
	// A complete request followed by another write leaves with it.
	c.Read(buf[:0])
	c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	c.Write([]byte("x"))
	got := make([]byte, 0, 32)
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < 19 {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, []byte("GET / HTTP/1.1\r\n\r\nx")) {
		t.Fatalf("server got %q", got)
	}
}

// BenchmarkRequestLeft: the framing read of every upstream request (the
// header block of a chat call as fasthttp's client writes it).
func BenchmarkRequestLeft(b *testing.B) {
	p := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8090\r\nContent-Type: application/json\r\n" +
		"User-Agent: gw\r\nAuthorization: Bearer sk-upstream-key-0123456789\r\nAccept-Encoding: identity\r\n" +
		"Content-Length: 1200\r\n\r\n" + string(bytes.Repeat([]byte("x"), 1200)))
	b.ReportAllocs()
	for b.Loop() {
		if RequestLeft(p) != 0 {
			b.Fatal("not complete")
		}
	}
}
