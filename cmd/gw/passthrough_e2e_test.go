package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gw/edge/usage/usagetest"
)

const passthroughFile = `_format_version: "1"
provider_keys:
  - display_name: oa
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${PT_UP}/v1
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_routes: ["oa-*", "public"]}
  - {display_name: other, key_env: PT_OTHER_KEY, allowed_routes: ["pub*"]}
  - {display_name: anon, key_env: PT_ANON_KEY, allowed_routes: ["public"]}
  - {display_name: limited, key_env: PT_LIMITED_KEY, allowed_routes: ["public"], rate_limit: {rpm: 2}}
passthrough_routes:
  - name: oa-files
    path: /openai
    provider_key: oa
    timeout_ms: 400
  - name: oa-ro
    path: /openai-ro
    provider_key: oa
    methods: [GET]
    strip_prefix: false
  - name: public
    path: /public
    upstream: ${PT_UP}
    anonymous_key: anon
guardrails:
  - name: no-secrets
    kind: keyword
    hook_point: input
    patterns: [{kind: literal, value: TOP-SECRET}]
guardrail_attachments:
  - {guardrail_id: no-secrets, scope_type: passthrough_route, scope_id: oa-files}
observability_exporters:
  - {name: otel, kind: otlp_http, endpoint: "${E2E_OTLP}", batch_size: 1, flush_interval_ms: 100}
`

// ptUpstream is the route's upstream: it echoes what it received, streams
// on /stream one chunk per release, and counts its requests.
type ptUpstream struct {
	hits    atomic.Int64
	release chan struct{} // /stream: one receive per chunk after the first
	gotBody chan struct{} // /upload: closed when the first body bytes arrive
	once    sync.Once
}

func (u *ptUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.hits.Add(1)
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case strings.HasSuffix(path, "/stream"):
		w.Header().Set("Content-Type", "text/plain")
		for i := 0; i < 3; i++ {
			if i > 0 {
				<-u.release
			}
			io.WriteString(w, "chunk-"+string(rune('0'+i))+";")
			w.(http.Flusher).Flush()
		}
		return
	case strings.HasSuffix(path, "/slow"):
		time.Sleep(time.Second)
	case strings.HasSuffix(path, "/upload"):
		var buf [4096]byte
		n, _ := io.ReadAtLeast(r.Body, buf[:], 1)
		u.once.Do(func() { close(u.gotBody) })
		rest, _ := io.Copy(io.Discard, r.Body)
		json.NewEncoder(w).Encode(map[string]any{"bytes": int64(n) + rest})
		return
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Upstream", "yes")
	json.NewEncoder(w).Encode(map[string]any{
		"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery,
		"authorization": r.Header.Get("Authorization"), "x_api_key": r.Header.Get("X-Api-Key"),
		"cookie": r.Header.Get("Cookie"), "custom": r.Header.Get("X-Custom"), "body": string(body),
	})
}

// TestPassthroughE2E: inject mode (the upstream sees the provider key and
// never the caller's), strip_prefix, methods, allowed_routes,
// anonymous_key, a guardrail block, timeouts, and bodies streamed both
// ways, through the real binary; every request leaves a usage record.
func TestPassthroughE2E(t *testing.T) {
	up := &ptUpstream{release: make(chan struct{}), gotBody: make(chan struct{})}
	srv := startHTTP(t, up)
	rcv := usagetest.StartOTLP(t)
	t.Setenv("PT_UP", srv)
	t.Setenv("PT_OTHER_KEY", "other-e2e")
	t.Setenv("PT_ANON_KEY", "anon-e2e")
	t.Setenv("PT_LIMITED_KEY", "limited-e2e")
	t.Setenv("E2E_OTLP", rcv.URL)
	g := startGW(t, writeTemp(t, "pt.yaml", passthroughFile))
	base := "http://" + g.addr

	do := func(t *testing.T, method, path string, hdr map[string]string, body io.Reader) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, body)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}
	echo := func(t *testing.T, b []byte) map[string]string {
		t.Helper()
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return m
	}
	caller := map[string]string{"Authorization": "Bearer caller-e2e", "Cookie": "session=1", "X-Custom": "kept"}

	t.Run("inject", func(t *testing.T) {
		for _, hdr := range []map[string]string{caller, {"X-Api-Key": "caller-e2e", "X-Custom": "kept"}} {
			resp, b := do(t, "POST", "/openai/files?purpose=batch", hdr, strings.NewReader(`{"a":"b"}`))
			if resp.StatusCode != 200 || resp.Header.Get("X-Upstream") != "yes" {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			m := echo(t, b)
			if m["authorization"] != "Bearer sk-e2e" || m["x_api_key"] != "" || m["cookie"] != "" {
				t.Fatalf("upstream credentials: %q %q cookie %q", m["authorization"], m["x_api_key"], m["cookie"])
			}
			if m["path"] != "/v1/files" || m["query"] != "purpose=batch" || m["custom"] != "kept" || m["body"] != `{"a":"b"}` || m["method"] != "POST" {
				t.Fatalf("upstream saw %v", m)
			}
			if strings.Contains(string(b), "caller-e2e") {
				t.Fatal("the caller's key reached the upstream")
			}
		}
	})
	t.Run("strip_prefix false and methods", func(t *testing.T) {
		resp, b := do(t, "GET", "/openai-ro/models", caller, nil)
		if resp.StatusCode != 200 || echo(t, b)["path"] != "/v1/openai-ro/models" {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		resp, b = do(t, "DELETE", "/openai-ro/models", caller, nil)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" || !strings.Contains(string(b), `"method_not_allowed"`) {
			t.Fatalf("status %d allow %q: %s", resp.StatusCode, resp.Header.Get("Allow"), b)
		}
	})
	t.Run("grants and credentials", func(t *testing.T) {
		resp, b := do(t, "GET", "/openai/models", map[string]string{"Authorization": "Bearer other-e2e"}, nil)
		if resp.StatusCode != 403 || !strings.Contains(string(b), `"type":"permission_error"`) {
			t.Fatalf("allowed_routes: status %d: %s", resp.StatusCode, b)
		}
		resp, b = do(t, "GET", "/openai/models", nil, nil)
		if resp.StatusCode != 401 {
			t.Fatalf("no credential: status %d: %s", resp.StatusCode, b)
		}
		resp, b = do(t, "GET", "/public/x", map[string]string{"Authorization": "Bearer wrong"}, nil)
		if resp.StatusCode != 401 {
			t.Fatalf("a wrong key is not anonymous: status %d: %s", resp.StatusCode, b)
		}
	})
	t.Run("anonymous_key", func(t *testing.T) {
		resp, b := do(t, "GET", "/public/thing", map[string]string{"X-Custom": "x"}, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if m := echo(t, b); m["path"] != "/thing" || m["authorization"] != "" || m["custom"] != "x" {
			t.Fatalf("upstream saw %v", m)
		}
		// A caller key on a plain route is gw's credential: never relayed.
		resp, b = do(t, "GET", "/public/thing", map[string]string{"Authorization": "Bearer other-e2e"}, nil)
		if resp.StatusCode != 200 || echo(t, b)["authorization"] != "" {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	})
	t.Run("guardrail", func(t *testing.T) {
		before := up.hits.Load()
		resp, b := do(t, "POST", "/openai/chat", caller, strings.NewReader(`{"messages":[{"content":"the TOP-SECRET plan"}]}`))
		if resp.StatusCode != 422 || !strings.Contains(string(b), `"code":"content_filter"`) || strings.Contains(string(b), "TOP-SECRET") {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if up.hits.Load() != before {
			t.Fatal("a blocked request reached the upstream")
		}
	})
	t.Run("timeout", func(t *testing.T) {
		resp, b := do(t, "GET", "/openai/slow", caller, nil)
		if resp.StatusCode != 504 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
	})
	t.Run("streamed response", func(t *testing.T) {
		req, _ := http.NewRequest("GET", base+"/openai/stream", nil)
		req.Header.Set("Authorization", "Bearer caller-e2e")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		// Each chunk arrives before the upstream is allowed to send the
		// next one: nothing is held back.
		var got bytes.Buffer
		buf := make([]byte, 64)
		for i := 0; i < 3; i++ {
			want := "chunk-" + string(rune('0'+i)) + ";"
			for !strings.HasSuffix(got.String(), want) {
				n, err := resp.Body.Read(buf)
				got.Write(buf[:n])
				if err != nil && !strings.HasSuffix(got.String(), want) {
					t.Fatalf("after %q: %v", got.String(), err)
				}
			}
			if i < 2 {
				up.release <- struct{}{}
			}
		}
	})
	t.Run("streamed request body", func(t *testing.T) {
		pr, pw := io.Pipe()
		var buffered atomic.Bool
		go func() {
			pw.Write(bytes.Repeat([]byte("a"), 1000))
			// The rest is sent only once the upstream has the first bytes.
			select {
			case <-up.gotBody:
			case <-time.After(5 * time.Second):
				buffered.Store(true) // gw held the body back
			}
			for i := 0; i < 64; i++ {
				pw.Write(bytes.Repeat([]byte("b"), 64<<10))
			}
			pw.Close()
		}()
		resp, b := do(t, "POST", "/public/upload", nil, pr)
		var m map[string]int64
		json.Unmarshal(b, &m)
		if resp.StatusCode != 200 || m["bytes"] != 1000+64*64<<10 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		if buffered.Load() {
			t.Fatal("the upstream saw no byte before the whole body was sent")
		}
	})
	t.Run("rate limit", func(t *testing.T) {
		hdr := map[string]string{"Authorization": "Bearer limited-e2e"}
		for i := 0; i < 2; i++ {
			if resp, b := do(t, "GET", "/public/x", hdr, nil); resp.StatusCode != 200 || resp.Header.Get("X-Ratelimit-Limit-Requests") != "2" ||
				resp.Header.Get("X-Ratelimit-Remaining-Requests") != string(rune('1'-i)) {
				t.Fatalf("call %d: status %d %v: %s", i, resp.StatusCode, resp.Header, b)
			}
		}
		before := up.hits.Load()
		resp, b := do(t, "GET", "/public/x", hdr, nil)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"code":"rate_limit_exceeded"`) ||
			!strings.Contains(string(b), `"type":"rate_limit_error"`) || up.hits.Load() != before {
			t.Fatalf("over the limit: status %d %v: %s", resp.StatusCode, resp.Header, b)
		}
	})
	t.Run("usage records", func(t *testing.T) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var posts, anon, blocked int
			for _, sp := range rcv.Spans() {
				if usagetest.Attr(sp, "gw.usage.inbound_protocol") != "passthrough" {
					continue
				}
				switch {
				case usagetest.Attr(sp, "gw.usage.operation") == "passthrough.post" && usagetest.Attr(sp, "gw.usage.provider_key") == "oa":
					posts++
				}
				if usagetest.Attr(sp, "gw.usage.api_key_name") == "anon" {
					anon++
				}
				if usagetest.Attr(sp, "error.type") == "guardrail_blocked" {
					blocked++
				}
			}
			if posts >= 3 && anon >= 2 && blocked == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("records: %d inject POSTs, %d anonymous, %d blocked", posts, anon, blocked)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// startHTTP serves h on a local port for the test's life and returns its URL.
func startHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
