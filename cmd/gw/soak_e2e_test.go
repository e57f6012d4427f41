package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gw/perf/mock"
	"gw/perf/soak"
)

// soakFile serves one alias on the mock; the key forwards the x-mock-* headers that
// set each answer's chunk count and size.
const soakFile = `_format_version: "1"
provider_keys:
  - display_name: mock
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_SOAK_MOCK}/v1
    request:
      forward_client_headers: ["x-mock-*"]
api_keys:
  - display_name: soak
    key_env: E2E_CALLER_KEY
    allowed_models: ["*"]
models:
  - display_name: soak
    provider: openai
    model_name: gpt-4o
    provider_key: mock
`

// TestSoakStreamsUnderReload runs 6,000 requests (80 % streamed, 20 chunks each) from 16
// callers through the race-built gw while it reloads every 200 ms, checks every answer
// byte for byte, and checks that gw's metrics and access log count what the callers saw.
// The size is what a rare race needs to show: the stream-state pool race broke about one
// stream in 2,300 here, so 6,000 requests catch such a bug about 95 % of the time (2,000
// caught it in 8 runs of 13). GW_SOAK_REQUESTS=n runs n requests instead.
func TestSoakStreamsUnderReload(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: skipped with -short")
	}
	requests := 6000
	if v := os.Getenv("GW_SOAK_REQUESTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("GW_SOAK_REQUESTS=%q: want a number ≥ 10", v)
		}
		requests = n
	}
	const streamShare = 0.8
	streams := int(float64(requests) * streamShare) // as soak spreads the share
	startMock(t, "E2E_SOAK_MOCK", mock.Config{RecordLimit: -1})
	g := startGW(t, writeTemp(t, "soak.yaml", soakFile), "--access-log=true")
	before := waitStatus(t, g.addr, func(s configStatus) bool { return s.State == "synced" })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second+time.Duration(requests)*10*time.Millisecond)
	defer cancel()
	res, err := soak.Run(ctx, soak.Config{
		Base: "http://" + g.addr + "/v1", CallerKey: "caller-e2e", Model: "soak", UpstreamModel: "gpt-4o",
		Concurrency: 16, Requests: requests, StreamShare: streamShare, IncludeUsageShare: 0.5, Chunks: 20, ChunkSize: 16,
		ReloadEvery: 200 * time.Millisecond, ReloadPID: g.cmd.Process.Pid, Timeout: 20 * time.Second,
	})
	t.Logf("soak: %d requests (%d streamed, %d buffered) in %s, %d broken, statuses %v, %d reloads, %d body bytes",
		res.Total, res.Streamed, res.Buffered, res.Elapsed.Round(time.Millisecond), res.Broken, res.Status, res.Reloads, res.BodyBytes)
	if err != nil {
		t.Fatalf("soak did not finish: %v", err)
	}
	if res.Total != requests || res.Streamed != streams || res.Buffered != requests-streams {
		t.Fatalf("ran %d requests (%d streamed, %d buffered); want %d (%d, %d)", res.Total, res.Streamed, res.Buffered, requests, streams, requests-streams)
	}
	if res.Broken != 0 {
		t.Errorf("%d of %d answers broken; first ones:\n  %s", res.Broken, res.Total, strings.Join(res.Failures, "\n  "))
	}
	if res.Status[200] != res.Total {
		t.Errorf("statuses seen by the callers: %v; want all 200", res.Status)
	}
	// The reloads happened during the load, and gw applied them.
	after := waitStatus(t, g.addr, func(s configStatus) bool { return s.ApplySeq > before.ApplySeq })
	if res.Reloads < 2 || after.State != "synced" {
		t.Errorf("%d SIGHUPs sent, apply_seq %d → %d, state %s; want reloads under load", res.Reloads, before.ApplySeq, after.ApplySeq, after.State)
	}

	// gw's bookkeeping: its counters and its access log match what the callers saw.
	// Both are written after the last byte of an answer (the access log by a background
	// writer), so they may lag the callers for a moment.
	metricsDiff := pollEqual(res.Status, func() (map[int]int, error) { return soak.MetricsRequests("http://"+g.addr, "soak") })
	if metricsDiff != "" {
		t.Errorf("gw_requests_total{model=\"soak\"} differs from the callers' counts: %s", metricsDiff)
	}
	logDiff := pollEqual(res.Status, func() (map[int]int, error) { return soak.AccessLogCounts([]byte(g.stderr.String())), nil })
	if logDiff != "" {
		t.Errorf("access-log lines differ from the callers' counts: %s", logDiff)
	}
	if s, b := soak.AccessLogStreams([]byte(g.stderr.String())); s != res.Streamed || b != res.Buffered {
		t.Errorf("access log: %d streamed, %d buffered; callers %d, %d", s, b, res.Streamed, res.Buffered)
	}
	if panics := linesWith(g.stderr.String(), "panic"); len(panics) > 0 {
		t.Errorf("gw logged %d panic lines; first: %s", len(panics), panics[0])
	}
}

// pollEqual reads got until it equals want or 5 s pass; it returns "" or the last difference.
func pollEqual(want map[int]int, got func() (map[int]int, error)) string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, err := got()
		switch {
		case err == nil && maps.Equal(g, want):
			return ""
		case time.Now().After(deadline):
			if err != nil {
				return err.Error()
			}
			return fmt.Sprintf("gw %v, callers %v", g, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func linesWith(text, sub string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}
