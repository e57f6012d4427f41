package upstream

import (
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// openStream starts a streamed POST on a pooled client of s.
func openStream(t *testing.T, c *Client, url string) *fasthttp.Response {
	t.Helper()
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod("POST")
	req.SetRequestURI(url)
	resp := fasthttp.AcquireResponse()
	if err := c.DoStream(req, resp, 5*time.Second); err != nil {
		t.Fatalf("DoStream: %v", err)
	}
	return resp
}

// TestIdleHook: the hook runs when a read finds nothing more has arrived
// (not while data is ready), the gap applies to the reads that wait, a hook
// reporting the caller gone fails the read at once, and a body read to its
// end returns the connection to the pool through CloseStream.
func TestIdleHook(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run("tls="+strconv.FormatBool(useTLS), func(t *testing.T) {
			step := make(chan struct{})
			var ca *testCA
			if useTLS {
				ca = newTestCA(t)
			}
			s := startServer(t, ca, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				switch r.URL.Query().Get("mode") {
				case "short":
					w.Write([]byte("data: 1\n\n"))
					return
				}
				w.Write([]byte("data: 1\n\n"))
				w.(http.Flusher).Flush()
				select { // the test's hook releases the second event
				case <-step:
				case <-r.Context().Done():
					return
				}
				w.Write([]byte("data: 2\n\n"))
				w.(http.Flusher).Flush()
				<-r.Context().Done() // then stall
			})
			scheme := "http"
			if useTLS {
				scheme = "https"
			}
			base := scheme + "://" + fakeHost + ":" + strconv.Itoa(s.port)
			p := NewPool(Options{})
			c, _ := p.Client(Target{BaseURL: base, TLS: TLS{CAPool: testPool(ca), CACert: "ca", Verify: true},
				ResolveAddresses: []netip.Addr{loopback}})

			resp := openStream(t, c, base+"/v1/chat/completions")
			idles := 0
			if !SetIdleHook(resp, func() bool {
				idles++
				if idles == 1 {
					close(step) // nothing more ready after event 1: let the upstream send event 2
				}
				return idles < 3
			}, 300*time.Millisecond) {
				t.Fatal("SetIdleHook reported false")
			}
			body := resp.BodyStream()
			buf := make([]byte, 64)
			got := ""
			for len(got) < len("data: 1\n\ndata: 2\n\n") {
				n, err := body.Read(buf)
				if err != nil {
					t.Fatalf("read after %q: %v", got, err)
				}
				got += string(buf[:n])
			}
			if got != "data: 1\n\ndata: 2\n\n" || idles == 0 {
				t.Fatalf("got %q with %d idle calls", got, idles)
			}
			// The upstream stalls now: the next idle call (the third) reports
			// the caller gone, so the read fails at once instead of timing out.
			for idles < 3 {
				start := time.Now()
				_, err := body.Read(buf)
				if idles < 3 {
					if !IsTimeout(err) || time.Since(start) < 200*time.Millisecond {
						t.Fatalf("stalled read: %v after %s; want the 300 ms gap timeout", err, time.Since(start))
					}
					continue
				}
				if !errors.Is(err, ErrCallerGone) {
					t.Fatalf("read with the caller gone: %v; want ErrCallerGone", err)
				}
			}
			CloseStream(resp) // unfinished: the connection is closed
			fasthttp.ReleaseResponse(resp)

			// A body read to its end returns the connection to the pool.
			for i := 0; i < 5; i++ {
				resp := openStream(t, c, base+"/v1/chat/completions?mode=short")
				SetIdleHook(resp, func() bool { return true }, time.Second)
				if b, err := io.ReadAll(resp.BodyStream()); err != nil || string(b) != "data: 1\n\n" {
					t.Fatalf("short stream %q, %v", b, err)
				}
				CloseStream(resp)
				fasthttp.ReleaseResponse(resp)
			}
			if n := s.conns.Load(); n != 2 {
				t.Fatalf("%d connections; want 2 (the abandoned stream's, then one for the 5 finished ones)", n)
			}
		})
	}
}

// TestCloseStreamWithoutBody: closing the stream of an answer without a
// body (204), whose connection fasthttp gave back at once, leaves alone the
// stream that connection carries next (its idle hook).
func TestCloseStreamWithoutBody(t *testing.T) {
	s := startServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("mode") == "empty" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: 1\n\n"))
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond) // the client's read waits: its hook runs
		w.Write([]byte("data: 2\n\n"))
	})
	base := "http://127.0.0.1:" + strconv.Itoa(s.port)
	c, _ := NewPool(Options{}).Client(Target{BaseURL: base})
	empty := openStream(t, c, base+"/x?mode=empty")
	defer fasthttp.ReleaseResponse(empty)
	stream := openStream(t, c, base+"/x") // the same connection
	defer fasthttp.ReleaseResponse(stream)
	idled := 0
	if !SetIdleHook(stream, func() bool { idled++; return true }, 5*time.Second) {
		t.Fatal("SetIdleHook reported false")
	}
	CloseStream(empty)
	if b, err := io.ReadAll(stream.BodyStream()); err != nil || string(b) != "data: 1\n\ndata: 2\n\n" {
		t.Fatalf("body %q, %v", b, err)
	}
	CloseStream(stream)
	if idled == 0 {
		t.Fatal("the idle hook never ran: closing the answer without a body cleared it")
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections; want 1 (the answer without a body gave its connection back)", n)
	}
}
