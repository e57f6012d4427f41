package statusui

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

func serve(t *testing.T, u *UI) *http.Client {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if !u.Handle(ctx, string(ctx.Path())) {
			ctx.SetStatusCode(599)
		}
	}}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	t.Cleanup(func() { u.Close(); _ = srv.Shutdown() })
	return &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return ln.Dial() }}}
}

// TestUIRoutes: the bundle, the state and the method rule, with the
// headers that keep the page same-origin.
func TestUIRoutes(t *testing.T) {
	u := New(func() ([]byte, error) { return []byte(`{"ok":true}`), nil })
	c := serve(t, u)
	for _, tc := range []struct {
		method, path string
		status       int
		ctype, body  string
	}{
		{"GET", "/ui/", 200, "text/html", "<title>gw status</title>"},
		{"GET", "/ui/app.js", 200, "text/javascript", "EventSource"},
		{"GET", "/ui/style.css", 200, "text/css", ".card"},
		{"GET", "/ui/state", 200, "application/json", `{"ok":true}`},
		{"GET", "/ui/nope", 404, "text/plain", "not found"},
		{"POST", "/ui/state", 405, "text/plain", "method not allowed"},
		{"GET", "/uix", 599, "", ""},
	} {
		req, _ := http.NewRequest(tc.method, "http://gw"+tc.path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&sb)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(sb.String(), tc.body) {
			t.Errorf("%s %s: %d %q %.80q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), sb.String())
		}
		if tc.status != 599 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: no CSP", tc.path)
		}
	}
	req, _ := http.NewRequest("GET", "http://gw/ui", nil)
	resp, err := (&http.Client{Transport: c.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 302 || !strings.HasSuffix(resp.Header.Get("Location"), "/ui/") {
		t.Errorf("/ui: %d -> %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestUIEvents: the stream sends a state at once and then one per
// Interval, each a single-line data field; Close ends it.
func TestUIEvents(t *testing.T) {
	n := 0
	u := New(func() ([]byte, error) { n++; return []byte(`{"n":` + string(rune('0'+n%10)) + `}`), nil })
	c := serve(t, u)
	resp, err := c.Get("http://gw/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	start := time.Now()
	var events []string
	for len(events) < 2 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			events = append(events, strings.TrimSpace(line[6:]))
		}
	}
	if events[0] != `{"n":1}` || events[1] != `{"n":2}` {
		t.Fatalf("events %q", events)
	}
	if d := time.Since(start); d < Interval/2 {
		t.Fatalf("second event after %v; want about one Interval", d)
	}
	u.Close()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := r.ReadString('\n'); err != nil {
			return // the stream ended
		}
	}
	t.Fatal("the stream did not end after Close")
}
