package upstream

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestDoStreamWatchedAbort: a watched exchange aborted from another
// goroutine while the server has not answered yet, or while its body
// streams, ends at once; the server sees its connection end, and the
// request is not resent although it ran on a reused connection.
func TestDoStreamWatchedAbort(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    bool
		inBody bool // abort after the head, while the body streams
	}{
		{"head", false, false},
		{"head tls", true, false},
		{"body", false, true},
		{"body tls", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ca *testCA
			scheme := "http"
			if tc.tls {
				ca, scheme = newTestCA(t), "https"
			}
			var requests atomic.Int64
			waiting := make(chan struct{}, 1)
			ended := make(chan struct{}, 1)
			s := startServer(t, ca, func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				body, _ := io.ReadAll(r.Body)
				if string(body) != "block" {
					w.Write([]byte("ok"))
					return
				}
				if tc.inBody {
					w.Header().Set("Content-Type", "text/event-stream")
					w.Write([]byte("data: 1\n\n"))
					w.(http.Flusher).Flush()
				}
				waiting <- struct{}{}
				<-r.Context().Done() // the client closed the connection
				ended <- struct{}{}
			})
			base := scheme + "://" + fakeHost + ":" + strconv.Itoa(s.port)
			c, _ := NewPool(Options{}).Client(Target{BaseURL: base, TLS: TLS{CAPool: testPool(ca), CACert: "ca", Verify: true},
				ResolveAddresses: []netip.Addr{loopback}})
			exchange := func(body string, watch func(*Conn) error) (*fasthttp.Response, error) {
				req := fasthttp.AcquireRequest()
				defer fasthttp.ReleaseRequest(req)
				req.Header.SetMethod("POST")
				req.SetRequestURI(base + "/x")
				resp := fasthttp.AcquireResponse()
				return resp, c.DoStreamWatched(req, []byte(body), resp, 5*time.Second, watch)
			}
			// A warm connection, which the watched request reuses.
			resp, err := exchange("warm", func(*Conn) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(resp.BodyStream()); err != nil || string(b) != "ok" {
				t.Fatalf("warm-up answer %q, %v", b, err)
			}
			CloseStream(resp)
			fasthttp.ReleaseResponse(resp)

			conns := make(chan *Conn, 2)
			abort := func() {
				<-waiting
				time.Sleep(20 * time.Millisecond) // the read waits by now
				(<-conns).Abort()
			}
			if !tc.inBody {
				go abort()
			}
			start := time.Now()
			resp, err = exchange("block", func(c *Conn) error { conns <- c; return nil })
			if !tc.inBody {
				if err == nil {
					t.Fatalf("no error; status %d", resp.StatusCode())
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(resp.BodyStream())
				if line, err := br.ReadString('\n'); err != nil || line != "data: 1\n" {
					t.Fatalf("first line %q, %v", line, err)
				}
				br.ReadString('\n')
				go abort()
				if _, err = br.ReadString('\n'); err == nil {
					t.Fatal("a read after the abort succeeded")
				}
				CloseStream(resp)
			}
			fasthttp.ReleaseResponse(resp)
			if el := time.Since(start); el > 3*time.Second {
				t.Fatalf("the abort took %v", el)
			}
			select {
			case <-ended:
			case <-time.After(5 * time.Second):
				t.Fatal("the server did not see the connection end")
			}
			if n := requests.Load(); n != 2 {
				t.Fatalf("%d requests; want 2 (the aborted one not resent)", n)
			}
			if n := s.conns.Load(); n != 1 {
				t.Fatalf("%d connections; want 1", n)
			}
		})
	}
}

// rawServer answers each request with answer and closes the connection
// without saying so (an idle timeout), recording the request bodies.
func rawServer(t *testing.T, answer string) (base string, bodies func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				var req fasthttp.Request
				if err := req.Read(bufio.NewReader(c)); err != nil {
					return
				}
				mu.Lock()
				got = append(got, string(req.Body()))
				mu.Unlock()
				c.Write([]byte(answer))
			})
		}
	}()
	return "http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestDoStreamWatchedResend: on a stale keep-alive connection the watched
// request is resent whole on a new one, which watch gets too; a request
// watch refuses is neither sent nor resent.
func TestDoStreamWatchedResend(t *testing.T) {
	base, bodies := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
	c, _ := NewPool(Options{}).Client(Target{BaseURL: base})
	refused := errors.New("refused")
	for _, tc := range []struct {
		body    string
		refuse  bool
		watched int
	}{
		{"one", false, 1},
		{"two", false, 2}, // the first connection is stale by now
		{"three", true, 1},
	} {
		var watched []*Conn
		req := fasthttp.AcquireRequest()
		req.Header.SetMethod("POST")
		req.SetRequestURI(base + "/x")
		resp := fasthttp.AcquireResponse()
		err := c.DoStreamWatched(req, []byte(tc.body), resp, 5*time.Second, func(c *Conn) error {
			watched = append(watched, c)
			if tc.refuse {
				return refused
			}
			return nil
		})
		if tc.refuse {
			if !errors.Is(err, refused) {
				t.Fatalf("%s: %v; want the watch's error", tc.body, err)
			}
		} else {
			if err != nil {
				t.Fatalf("%s: %v", tc.body, err)
			}
			if b, err := io.ReadAll(resp.BodyStream()); err != nil || string(b) != "{}" {
				t.Fatalf("%s: answer %q, %v", tc.body, b, err)
			}
			CloseStream(resp)
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		if len(watched) != tc.watched || len(watched) == 2 && watched[0] == watched[1] {
			t.Fatalf("%s: watch got %d connections; want %d different ones", tc.body, len(watched), tc.watched)
		}
		time.Sleep(50 * time.Millisecond) // the server has closed the connection by now
	}
	if got := bodies(); len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Fatalf("server read %q; want one, two", got)
	}
}
