package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestDeferredRequestBodies: requests below, at and above maxPend (sent
// with the read of their answer, or at once) and a long one the socket
// cannot take in one write reach the upstream byte for byte, on one pooled
// connection.
func TestDeferredRequestBodies(t *testing.T) {
	var conns atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := sha256.New()
			n, _ := io.Copy(io.Discard, io.TeeReader(r.Body, h))
			w.Header().Set("X-Len", strconv.FormatInt(n, 10))
			w.Write([]byte(hex.EncodeToString(h.Sum(nil))))
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	c, _ := NewPool(Options{}).Client(Target{BaseURL: base})
	for _, size := range []int{0, 1, 1000, maxPend - 300, maxPend, maxPend + 1, 300 << 10, 8 << 20} {
		body := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		req := fasthttp.AcquireRequest()
		req.Header.SetMethod("POST")
		req.SetRequestURI(base + "/x")
		req.SetBody(body)
		resp := fasthttp.AcquireResponse()
		if err := c.Do(req, resp, 10*time.Second); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		sum := sha256.Sum256(body)
		if got := string(resp.Body()); got != hex.EncodeToString(sum[:]) || string(resp.Header.Peek("X-Len")) != strconv.Itoa(size) {
			t.Fatalf("%d bytes: upstream saw %s bytes, hash %s", size, resp.Header.Peek("X-Len"), got)
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections; want 1", n)
	}
}

// TestDeferredRequestTimeout: an upstream that takes the request and never
// answers ends the wait at the request's deadline.
func TestDeferredRequestTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	base := "http://" + ln.Addr().String()
	c, _ := NewPool(Options{}).Client(Target{BaseURL: base})
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod("POST")
	req.SetRequestURI(base + "/x")
	req.SetBodyString(`{"x":1}`)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	start := time.Now()
	err = c.Do(req, resp, 200*time.Millisecond)
	if took := time.Since(start); err == nil || took > 2*time.Second {
		t.Fatalf("after %s: %v; want a timeout near 200 ms", took, err)
	}
	if Classify(err, 0) != KindTimeout && !errors.Is(err, fasthttp.ErrTimeout) {
		t.Fatalf("%v: want a timeout", err)
	}
}
