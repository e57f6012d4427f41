package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/perf/mock"
)

// Misbehaving peers: callers that send ambiguous framing, trickle headers
// or oversized bodies, and upstreams that answer garbage, huge bodies or
// back-off statuses. Each case drives the real binary.

const peersFile = `_format_version: "1"
provider_keys:
  - display_name: mock
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_MOCK_BASE}/v1
    request:
      forward_client_headers: ["x-mock-*"]
  - display_name: odd
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_ODD_BASE}/v1
  - display_name: dead
    api_key: ${E2E_OPENAI_KEY}
    api_base: http://127.0.0.1:1/v1
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o
    provider_key: mock
  - display_name: odd
    provider: openai
    model_name: gpt-4o
    provider_key: odd
  - display_name: unreachable
    provider: openai
    model_name: gpt-4o
    provider_key: dead
  - display_name: odd-then-gpt
    routing:
      targets: [{model: odd, priority: 1}, {model: gpt}]
`

// oddUpstream answers as the x-odd request header says (forwarded by no
// key, so it is set per test through the path): garbage 200s and 429s with
// back-off headers.
type oddUpstream struct {
	mode  atomic.Value // string
	calls atomic.Int64
}

func (o *oddUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.calls.Add(1)
	io.Copy(io.Discard, r.Body)
	switch o.mode.Load().(string) {
	case "html":
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>502 Bad Gateway (nginx)</body></html>")
	case "empty":
		w.Header().Set("Content-Type", "application/json")
	case "429":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		w.Header().Set("x-ratelimit-remaining-requests", "0")
		w.Header().Set("x-ratelimit-reset-requests", "7s")
		w.Header().Set("anthropic-ratelimit-requests-remaining", "0")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
	}
}

type peersEnv struct {
	gw     *proc
	odd    *oddUpstream
	client openai.Client
}

func startPeers(t *testing.T, extra ...string) *peersEnv {
	t.Helper()
	startMock(t, "E2E_MOCK_BASE", mock.Config{})
	odd := &oddUpstream{}
	odd.mode.Store("html")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: odd}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("E2E_ODD_BASE", "http://"+ln.Addr().String())
	g := startGW(t, writeTemp(t, "peers.yaml", peersFile), extra...)
	return &peersEnv{gw: g, odd: odd, client: openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"),
		option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))}
}

// rawExchange sends raw bytes on a new connection and reads until the
// server closes it; closed is false when it was left open.
func rawExchange(t *testing.T, addr, raw string) (string, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte(raw))
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(conn)
	return string(b), err == nil
}

// TestPeersCallerKeysNeverLogged: requests the HTTP library cannot parse
// carry a caller key in Authorization; gw's log shows the library's error
// lines (routed through gw's logger) but never the key.
func TestPeersCallerKeysNeverLogged(t *testing.T) {
	e := startPeers(t)
	const key = "sk-gw-leakcheck-0123456789abcdef"
	for _, bad := range []string{
		"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
		"Transfer-Encoding: gzip\r\n\r\n{}",
		"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"Content-Length: x\r\n\r\n",
		"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
		"X-Bad\x01Header: 1\r\n\r\n",
	} {
		out, closed := rawExchange(t, e.gw.addr, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+key+"\r\nx-api-key: "+key+"\r\n"+bad)
		if !strings.HasPrefix(out, "HTTP/1.1 400") || !closed {
			t.Fatalf("%q: want 400 and a closed connection, got (closed=%v)\n%s", bad, closed, out)
		}
	}
	time.Sleep(200 * time.Millisecond)
	logs := e.gw.stderr.String()
	if strings.Contains(logs, "leakcheck") {
		t.Fatalf("caller key in gw's log:\n%s", logs)
	}
	if !strings.Contains(logs, `"source":"http_server"`) {
		t.Fatalf("the HTTP library's error lines do not reach gw's log:\n%s", logs)
	}
}

// TestPeersSmuggling: Content-Length and Transfer-Encoding together get a
// 400 and a closed connection; the request hidden after the chunked body is
// never served.
func TestPeersSmuggling(t *testing.T) {
	e := startPeers(t)
	hidden := "GET /v1/models HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer caller-e2e\r\n\r\n"
	out, closed := rawExchange(t, e.gw.addr, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer caller-e2e\r\n"+
		"Content-Length: 48\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+hidden)
	if strings.Count(out, "HTTP/1.1 ") != 1 || !strings.HasPrefix(out, "HTTP/1.1 400") || !closed {
		t.Fatalf("CL+TE: want one 400 and a close, got (closed=%v)\n%s", closed, out)
	}
	if strings.Contains(out, `"object":"list"`) {
		t.Fatal("the smuggled request was served")
	}
}

// TestPeersSlowClients: connections that trickle their headers are closed
// after server.header_timeout while normal requests keep being served.
func TestPeersSlowClients(t *testing.T) {
	e := startPeers(t, "--header-timeout", "1s")
	const slow = 100
	var closedCount atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < slow; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", e.gw.addr)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer conn.Close()
			req := "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nX-Slow: "
			for j := 0; j < 50; j++ { // at most 50 × 100 ms, far beyond the timeout
				if _, err := conn.Write([]byte{req[j%len(req)]}); err != nil {
					closedCount.Add(1)
					return
				}
				conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				var b [1]byte
				n, err := conn.Read(b[:])
				if err != nil && isTimeout(err) {
					continue
				}
				if n > 0 { // gw answered (408): it must close right after
					conn.SetReadDeadline(time.Now().Add(2 * time.Second))
					_, err = io.Copy(io.Discard, conn)
				}
				if err == nil || !isTimeout(err) {
					closedCount.Add(1) // the server closed the connection
				}
				return
			}
			t.Errorf("a trickling connection stayed open for 5s")
		}()
	}
	time.Sleep(300 * time.Millisecond)
	// Meanwhile ordinary callers are served.
	for i := 0; i < 5; i++ {
		if _, err := e.client.Chat.Completions.New(context.Background(), chatParams("gpt")); err != nil {
			t.Fatalf("normal request during the slow-client flood: %v", err)
		}
	}
	wg.Wait()
	if n := closedCount.Load(); n != slow {
		t.Fatalf("%d of %d trickling connections closed by gw; want all", n, slow)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("slow connections lived %v; want about the 1s header timeout", d)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestPeersOversizedChunkedBody: a chunked request body without a length
// is refused with 413 as soon as it crosses server.max_body_bytes: gw stops
// reading and closes, so the sender cannot push the rest.
func TestPeersOversizedChunkedBody(t *testing.T) {
	e := startPeers(t, "--max-body-bytes", "1048576")
	conn, err := net.Dial("tcp", e.gw.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var sent atomic.Int64
	go func() {
		w := bufio.NewWriter(conn)
		fmt.Fprintf(w, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer caller-e2e\r\nTransfer-Encoding: chunked\r\n\r\n")
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		for i := 0; i < 1024; i++ { // up to 64 MiB
			fmt.Fprintf(w, "%x\r\n", len(chunk))
			w.Write(chunk)
			w.WriteString("\r\n")
			if w.Flush() != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
	}()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || !strings.Contains(string(body), "request_too_large") {
		t.Fatalf("got %d %s; want 413 request_too_large", resp.StatusCode, body)
	}
	time.Sleep(200 * time.Millisecond)
	if n := sent.Load(); n > 16<<20 {
		t.Fatalf("gw let the caller send %d bytes against a 1 MiB limit", n)
	}
}

// TestPeersUpstreamAnswers: garbage 2xx answers are failed attempts (502
// upstream_invalid_response, failover applies); answers above
// upstream.max_response_bytes are 502 upstream_response_too_large; an
// upstream 429 is relayed with its back-off headers; an unreachable
// upstream gets a clean message.
func TestPeersUpstreamAnswers(t *testing.T) {
	e := startPeers(t, "--upstream-max-response-bytes", "65536")
	ctx := context.Background()
	for _, mode := range []string{"html", "empty"} {
		e.odd.mode.Store(mode)
		_, err := e.client.Chat.Completions.New(ctx, chatParams("odd"))
		apiErr(t, err, 502, "upstream_invalid_response")
		// In a group the next target answers.
		before := e.odd.calls.Load()
		got, err := e.client.Chat.Completions.New(ctx, chatParams("odd-then-gpt"))
		if err != nil || got.Model != "odd-then-gpt" || e.odd.calls.Load() != before+1 {
			t.Fatalf("%s: failover after a garbage answer: %v %+v", mode, err, got)
		}
	}

	// A 100 KiB answer against a 64 KiB cap; the same through streaming is
	// not capped (it is relayed, never held whole).
	big := option.WithHeader("x-mock-chunks", "100")
	_, err := e.client.Chat.Completions.New(ctx, chatParams("gpt"), big, option.WithHeader("x-mock-chunk-size", "1024"))
	apiErr(t, err, 502, "upstream_response_too_large")
	if !strings.Contains(err.Error(), "upstream.max_response_bytes (65536 bytes)") {
		t.Fatalf("message: %v", err)
	}
	st := e.client.Chat.Completions.NewStreaming(ctx, chatParams("gpt"), big, option.WithHeader("x-mock-chunk-size", "1024"))
	n := 0
	for st.Next() {
		n++
	}
	if st.Err() != nil || n < 100 {
		t.Fatalf("large stream: %d chunks, %v", n, st.Err())
	}

	// 429 relayed with Retry-After and the rate-limit headers.
	e.odd.mode.Store("429")
	req, _ := http.NewRequest("POST", "http://"+e.gw.addr+"/v1/chat/completions", strings.NewReader(`{"model":"odd","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer caller-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" || resp.Header.Get("x-ratelimit-remaining-requests") != "0" ||
		resp.Header.Get("x-ratelimit-reset-requests") != "7s" || resp.Header.Get("anthropic-ratelimit-requests-remaining") != "0" {
		t.Fatalf("429 relay: %d %v", resp.StatusCode, resp.Header)
	}
	// Streaming request, same relay.
	req, _ = http.NewRequest("POST", "http://"+e.gw.addr+"/v1/chat/completions", strings.NewReader(`{"model":"odd","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer caller-e2e")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("streaming 429 relay: %d %v", resp.StatusCode, resp.Header)
	}

	// Unreachable: a clean message, the detail only in the log.
	_, err = e.client.Chat.Completions.New(ctx, chatParams("unreachable"))
	apiErr(t, err, 502, "upstream_unreachable")
	var apierr *openai.Error
	if !errors.As(err, &apierr) || apierr.Message != "cannot reach the upstream: connection refused" {
		t.Fatalf("unreachable message: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if !strings.Contains(e.gw.stderr.String(), "upstream attempt failed") {
		t.Fatal("the transport error detail is not logged")
	}
}
