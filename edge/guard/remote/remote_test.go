package remote

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newBackend(t testing.TB, h http.HandlerFunc, c Config) *Backend {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c.BaseURL = srv.URL + c.BaseURL
	if c.Name == "" {
		c.Name = "test backend"
	}
	b, err := New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

func TestPost(t *testing.T) {
	var gotPath, gotAuth, gotCT, gotBody string
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth, gotCT = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		body, _ := io.ReadAll(r.Body)
		gotBody = string(body)
		w.Write([]byte(`{"ok":true}`))
	}, Config{BaseURL: "/base/", Headers: []Header{{"Authorization", "Bearer sk-secret"}}})
	out, err := b.Endpoint("/v1/x").Post(context.Background(), []byte(`{"a":1}`), []byte("pre"))
	if err != nil {
		t.Fatalf("Post: %v", err)
	}
	if string(out) != `pre{"ok":true}` || gotPath != "/base/v1/x" || gotAuth != "Bearer sk-secret" ||
		gotCT != "application/json" || gotBody != `{"a":1}` {
		t.Fatalf("got out=%q path=%q auth=%q ct=%q body=%q", out, gotPath, gotAuth, gotCT, gotBody)
	}
}

func TestPostErrors(t *testing.T) {
	const secret, judged = "sk-very-secret", "my card is 4111"
	f := func(name string, h http.HandlerFunc, c Config, ctxTimeout time.Duration, want Class, wantStatus int) {
		t.Helper()
		c.Headers = []Header{{"Authorization", "Bearer " + secret}}
		b := newBackend(t, h, c)
		ctx := context.Background()
		if ctxTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, ctxTimeout)
			defer cancel()
		}
		start := time.Now()
		_, err := b.Endpoint("/p").Post(ctx, []byte(`{"text":"`+judged+`"}`), nil)
		var re *Error
		if !errors.As(err, &re) {
			t.Fatalf("%s: got %v; want *Error", name, err)
		}
		if re.Class != want || re.Status != wantStatus {
			t.Fatalf("%s: got class %v status %d; want %v %d (%v)", name, re.Class, re.Status, want, wantStatus, err)
		}
		if s := err.Error(); strings.Contains(s, secret) || strings.Contains(s, judged) || strings.Contains(s, "echo") {
			t.Fatalf("%s: error leaks: %q", name, s)
		}
		if want == ClassTimeout && time.Since(start) > 2*time.Second {
			t.Fatalf("%s: timeout took %v", name, time.Since(start))
		}
	}
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	}
	f("5xx", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		w.Write([]byte("echo " + judged))
	}, Config{}, 0, ClassStatus, 503)
	f("401", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }, Config{}, 0, ClassStatus, 401)
	f("timeout", slow, Config{Timeout: 50 * time.Millisecond}, 0, ClassTimeout, 0)
	f("ctx deadline earlier", slow, Config{Timeout: 10 * time.Second}, 50*time.Millisecond, ClassTimeout, 0)
	f("hang up", func(w http.ResponseWriter, r *http.Request) {
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		c.Close()
	}, Config{}, 0, ClassTransport, 0)
}

func TestNewRejects(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "/rel", "http://user:pw@host", "http://h/?q=1"} {
		if _, err := New(Config{Name: "b", BaseURL: u}); err == nil {
			t.Fatalf("New(%q): got nil error", u)
		} else if strings.Contains(err.Error(), "pw") {
			t.Fatalf("New(%q): error leaks user-info: %v", u, err)
		}
	}
}

// TestConcurrencyBound checks the semaphore: with MaxConcurrent 2 no more
// than 2 calls reach the backend at once, and a call that cannot get a
// slot before its deadline fails as a timeout.
func TestConcurrencyBound(t *testing.T) {
	var in, peak atomic.Int32
	release := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		n := in.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		in.Add(-1)
		w.Write([]byte("{}"))
	}, Config{MaxConcurrent: 2, Timeout: 5 * time.Second, BaseURL: "/sem"})
	ep := b.Endpoint("/x")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ep.Post(context.Background(), []byte("{}"), nil)
			errs <- err
		}()
	}
	for in.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	// The slots are taken: a call with a short deadline times out waiting.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	_, err := ep.Post(ctx, []byte("{}"), nil)
	cancel()
	var re *Error
	if !errors.As(err, &re) || re.Class != ClassTimeout {
		t.Fatalf("waiting call: got %v; want a timeout", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("queued call: %v", err)
		}
	}
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak concurrency: got %d; want 2", p)
	}
}

func TestTimeoutDefault(t *testing.T) {
	if Timeout(0) != DefaultTimeout || Timeout(250) != 250*time.Millisecond {
		t.Fatalf("Timeout: got %v, %v", Timeout(0), Timeout(250))
	}
}
