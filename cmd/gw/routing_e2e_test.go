package main

import (
	"syscall"
	"testing"
	"time"

	"gw/perf/mock"
)

const routingFile = `_format_version: "1"
provider_keys:
  - display_name: a
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_MOCK_A}/v1
    request: {forward_client_headers: ["x-mock-latency"]}
  - display_name: b
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_MOCK_B}/v1
    request: {forward_client_headers: ["x-mock-*"]}
api_keys:
  - display_name: dev
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - {display_name: ma, provider: openai, model_name: gpt-4o, provider_key: a}
  - display_name: mb
    provider: openai
    model_name: gpt-4o
    provider_key: b
    cooldown: {enabled: true, default_seconds: 30, max_seconds: 600}
  - display_name: failover
    routing:
      strategy: failover
      retry_on_429: true
      targets: [{model: mb, priority: 1}, {model: ma}]
  - display_name: only-b
    routing:
      targets: [{model: mb}]
  - display_name: slow-a
    provider: openai
    model_name: gpt-4o
    provider_key: a
    timeout: 300
  - display_name: timeout-failover
    routing:
      targets: [{model: slow-a, priority: 1}, {model: mb}]
  - display_name: anyway
    routing:
      when_all_unavailable: try_anyway
      targets: [{model: mb}]
  - display_name: weighted
    routing:
      strategy: round_robin
      targets: [{model: ma, weight: 3}, {model: mb, weight: 1}]
`

func startRoutingGW(t *testing.T) (*proc, *mock.Server, *mock.Server) {
	t.Helper()
	a, b := startMock(t, "E2E_MOCK_A", mock.Config{}), startMock(t, "E2E_MOCK_B", mock.Config{})
	return startGW(t, writeTemp(t, "routing.yaml", routingFile)), a, b
}

func TestRoutingFailoverCooldownRecovery(t *testing.T) {
	g, a, b := startRoutingGW(t)
	count := func(m *mock.Server) int64 { return m.Stats().Requests }

	// 429 with Retry-After: 1 on the preferred target: failover to a, b cools down for 1 s.
	st, _, body := chatStatus(t, g.addr, "caller-e2e", "failover", "x-mock-status", "429", "x-mock-retry-after", "1")
	if st != 200 {
		t.Fatalf("failover: %d %s", st, body)
	}
	if count(b) != 1 || count(a) != 1 {
		t.Fatalf("attempts: b %d a %d; want 1 and 1", count(b), count(a))
	}
	// While b cools down it is skipped: a serves at once.
	if st, _, _ := chatStatus(t, g.addr, "caller-e2e", "failover"); st != 200 || count(b) != 1 || count(a) != 2 {
		t.Fatalf("cooling target not skipped: status %d, b %d, a %d", st, count(b), count(a))
	}
	// Cooldown state is keyed by the model's derived ID: it survives a reload.
	g.cmd.Process.Signal(syscall.SIGHUP)
	waitStatus(t, g.addr, func(s configStatus) bool { return s.ApplySeq == 2 })
	if st, _, _ := chatStatus(t, g.addr, "caller-e2e", "failover"); st != 200 || count(b) != 1 {
		t.Fatalf("cooldown lost on reload: status %d, b %d", st, count(b))
	}
	// when_all_unavailable: fail (default) → 503 while the only target cools down.
	if st, _, body := chatStatus(t, g.addr, "caller-e2e", "only-b"); st != 503 {
		t.Fatalf("all targets cooling: %d %s", st, body)
	}
	// Recovery: after Retry-After, b is back in rotation.
	time.Sleep(1100 * time.Millisecond)
	if st, _, _ := chatStatus(t, g.addr, "caller-e2e", "failover"); st != 200 || count(b) != 2 {
		t.Fatalf("no recovery: status %d, b %d", st, count(b))
	}
	// A transport failure or 5xx also fails over (500 is always retryable).
	if st, _, _ := chatStatus(t, g.addr, "caller-e2e", "failover", "x-mock-status", "500"); st != 200 {
		t.Fatalf("500 failover: %d", st)
	}
}

func TestRoutingWeightedRoundRobin(t *testing.T) {
	g, a, b := startRoutingGW(t)
	for i := 0; i < 40; i++ {
		if st, _, body := chatStatus(t, g.addr, "caller-e2e", "weighted"); st != 200 {
			t.Fatalf("%d: %d %s", i, st, body)
		}
	}
	// Smooth weighted round robin is exact over full cycles: 3:1.
	if a.Stats().Requests != 30 || b.Stats().Requests != 10 {
		t.Fatalf("weights 3:1 gave a %d, b %d", a.Stats().Requests, b.Stats().Requests)
	}
}

func TestRoutingTimeoutAndTryAnyway(t *testing.T) {
	g, a, b := startRoutingGW(t)
	// The first target times out (timeout 300 ms, the mock answers after 1 s): fail over.
	st, _, body := chatStatus(t, g.addr, "caller-e2e", "timeout-failover", "x-mock-latency", "1s")
	if st != 200 || a.Stats().Requests != 1 || b.Stats().Requests != 1 {
		t.Fatalf("timeout failover: %d %s (a %d, b %d)", st, body, a.Stats().Requests, b.Stats().Requests)
	}
	// Put mb in cooldown (default 30 s) with a 503, then: fail → 503, try_anyway → still tried.
	chatStatus(t, g.addr, "caller-e2e", "only-b", "x-mock-status", "503")
	if st, _, _ := chatStatus(t, g.addr, "caller-e2e", "only-b"); st != 503 {
		t.Fatalf("when_all_unavailable fail: %d", st)
	}
	before := b.Stats().Requests
	if st, _, body := chatStatus(t, g.addr, "caller-e2e", "anyway"); st != 200 || b.Stats().Requests != before+1 {
		t.Fatalf("try_anyway: %d %s", st, body)
	}
}
