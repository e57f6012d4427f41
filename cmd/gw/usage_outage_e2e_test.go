package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"gw/edge/usage/usagetest"
)

// TestUsageLongOutageE2E: both sinks are down for two minutes (the OTLP
// receiver answers 503, the object store is killed) while requests keep
// flowing; when they come back every record arrives exactly once and
// nothing is dropped, because two minutes is inside the exporters' 5-minute
// retry window. (Beyond the window — a batch older than 5 minutes is dropped
// as retry_budget_exhausted — is driven by an injectable clock in
// edge/usage TestPipelineRetryBudget rather than 5 real minutes.)
// GW_E2E_OUTAGE shortens the outage for local runs (e.g. 10s).
func TestUsageLongOutageE2E(t *testing.T) {
	outage := 2 * time.Minute
	if v := os.Getenv("GW_E2E_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		outage = d
	}
	e := startUsage(t, "50", "200")
	e.otlp.FailWith(503, "")
	e.s3.Kill()
	ctx := context.Background()
	n := 0
	for end := time.Now().Add(outage); time.Now().Before(end); n++ {
		if _, err := e.sdk.Chat.Completions.New(ctx, chatParams("gpt")); err != nil {
			t.Fatalf("request %d during the outage: %v", n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if e.otlp.Requests() == 0 {
		t.Fatal("the OTLP exporter made no attempt during the outage")
	}
	e.otlp.FailWith(0, "")
	e.s3.Restart()
	// Backoff is capped at 30 s, so delivery resumes within about that.
	usagetest.Eventually(t, 90*time.Second, "every record at both sinks", func() bool {
		return len(e.otlp.Spans()) >= n && len(e.records(t)) >= n
	})
	seen := map[string]bool{}
	for _, r := range e.records(t) {
		id, _ := r["request_id"].(string)
		if id == "" || seen[id] {
			t.Fatalf("record without request_id or twice in the bucket: %v", r)
		}
		seen[id] = true
	}
	if len(seen) != n || len(e.otlp.Spans()) != n {
		t.Fatalf("bucket %d records, OTLP %d spans; want %d each", len(seen), len(e.otlp.Spans()), n)
	}
	resp, err := http.Get("http://" + e.gw.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "gw_usage_event_drops_total") && !strings.HasSuffix(line, " 0") {
			t.Fatalf("drops after an outage inside the retry window: %s", line)
		}
	}
	t.Logf("%d requests during a %v outage, all delivered once to both sinks", n, outage)
}
