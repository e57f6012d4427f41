package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"gw/limiter/redistest"
	"gw/perf/mock"
)

const limitsFile = `_format_version: "1"
provider_keys:
  - display_name: mock
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_MOCK_BASE}/v1
    request: {forward_client_headers: ["x-mock-*"]}
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
    rate_limit: {rpm: 5}
  - display_name: free
    key_env: E2E_FREE_KEY
    allowed_models: ["*"]
  - display_name: team
    key_env: E2E_TEAM_KEY
    allowed_models: ["*"]
    team_id: red
models:
  - display_name: gpt
    provider: openai
    model_name: gpt-4o
    provider_key: mock
  - display_name: tokens
    provider: openai
    model_name: gpt-4o
    provider_key: mock
    rate_limit: {tpm: 1000}
  - display_name: one-at-a-time
    provider: openai
    model_name: gpt-4o
    provider_key: mock
    rate_limit: {concurrency: 1}
rate_limit_policies:
  - name: team-red
    scope: team
    scope_ref: red
    window: minute
    max_requests: 3
`

func startLimitsGW(t *testing.T, extra ...string) (*proc, *mock.Server) {
	t.Helper()
	m := startMock(t, "E2E_MOCK_BASE", mock.Config{})
	t.Setenv("E2E_TEAM_KEY", "team-key")
	t.Setenv("E2E_FREE_KEY", "free-key")
	return startGW(t, writeTemp(t, "limits.yaml", limitsFile), extra...), m
}

func chatStatus(t *testing.T, addr, key, model string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header, string(b)
}

func TestRateLimitsLocal(t *testing.T) {
	g, _ := startLimitsGW(t)
	// Caller key rpm 5: five pass, the sixth gets 429 with headers.
	for i := 0; i < 5; i++ {
		st, h, body := chatStatus(t, g.addr, "caller-e2e", "gpt")
		if st != 200 {
			t.Fatalf("request %d: %d %s", i, st, body)
		}
		if h.Get("x-ratelimit-limit-requests") != "5" || h.Get("x-ratelimit-remaining-requests") != strconv.Itoa(4-i) {
			t.Fatalf("request %d headers: %v", i, h)
		}
	}
	st, h, body := chatStatus(t, g.addr, "caller-e2e", "gpt")
	if st != 429 || !strings.Contains(body, `"code":"rate_limit_exceeded"`) || h.Get("Retry-After") == "" || h.Get("x-ratelimit-remaining-requests") != "0" {
		t.Fatalf("sixth: %d %v %s", st, h, body)
	}
	// Team policy: 3 per minute for team red.
	for i := 0; i < 3; i++ {
		if st, _, body := chatStatus(t, g.addr, "team-key", "gpt"); st != 200 {
			t.Fatalf("team %d: %d %s", i, st, body)
		}
	}
	if st, _, _ := chatStatus(t, g.addr, "team-key", "gpt"); st != 429 {
		t.Fatalf("team policy not enforced: %d", st)
	}
	// Token limit tpm 1000: each request reserves its estimate (body/4 +
	// max_tokens 100 ≈ 125) and settles to the mock's usage (≈ 30), so far
	// more than 1000/125 = 8 requests pass before the window refuses.
	passed, refused := 0, false
	for i := 0; i < 80; i++ {
		st, _, body := chatStatus(t, g.addr, "free-key", "tokens")
		if st == 429 {
			refused = true
			if !strings.Contains(body, "tpm") {
				t.Fatalf("token refusal names the wrong limit: %s", body)
			}
			break
		}
		if st != 200 {
			t.Fatalf("tokens: %d %s", st, body)
		}
		passed++
	}
	if !refused || passed <= 10 {
		t.Fatalf("token limit: %d passed, refused %v (settling with usage should let > 10 pass, then refuse)", passed, refused)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	g, _ := startLimitsGW(t)
	var wg sync.WaitGroup
	var ok, limited atomic.Int32
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, _, _ := chatStatus(t, g.addr, "free-key", "one-at-a-time", "x-mock-latency", "300ms")
			switch st {
			case 200:
				ok.Add(1)
			case 429:
				limited.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() < 1 || limited.Load() < 1 || ok.Load()+limited.Load() != 4 {
		t.Fatalf("concurrency 1: ok %d limited %d", ok.Load(), limited.Load())
	}
	// Slots are released: a later request passes.
	if st, _, body := chatStatus(t, g.addr, "free-key", "one-at-a-time"); st != 200 {
		t.Fatalf("after release: %d %s", st, body)
	}
}

// TestRateLimitsSharedRedis: two gw processes share one limit through a real
// redis-server — exactly rpm requests pass across both, no more.
func TestRateLimitsSharedRedis(t *testing.T) {
	rs := redistest.Start(t)
	g1, _ := startLimitsGW(t, "--redis-addr", rs.Addr())
	g2 := startGW(t, writeTemp(t, "limits2.yaml", limitsFile), "--redis-addr", rs.Addr())
	passed := 0
	for i := 0; i < 10; i++ {
		addr := g1.addr
		if i%2 == 1 {
			addr = g2.addr
		}
		if st, _, _ := chatStatus(t, addr, "caller-e2e", "gpt"); st == 200 {
			passed++
		}
	}
	if passed != 5 {
		t.Fatalf("%d requests passed across two replicas; want exactly 5 (rpm 5)", passed)
	}
}

// TestRateCountersSurviveReload: counters are keyed by derived IDs and live
// outside the snapshot, so a SIGHUP does not reset a window.
func TestRateCountersSurviveReload(t *testing.T) {
	g, _ := startLimitsGW(t)
	for i := 0; i < 3; i++ {
		if st, _, body := chatStatus(t, g.addr, "caller-e2e", "gpt"); st != 200 {
			t.Fatalf("request %d: %d %s", i, st, body)
		}
	}
	g.cmd.Process.Signal(syscall.SIGHUP)
	waitStatus(t, g.addr, func(s configStatus) bool { return s.ApplySeq == 2 })
	for i := 3; i < 5; i++ {
		if st, _, body := chatStatus(t, g.addr, "caller-e2e", "gpt"); st != 200 {
			t.Fatalf("request %d after reload: %d %s", i, st, body)
		}
	}
	if st, _, _ := chatStatus(t, g.addr, "caller-e2e", "gpt"); st != 429 {
		t.Fatalf("sixth request after reload: %d; the reload reset the rpm window", st)
	}
}
