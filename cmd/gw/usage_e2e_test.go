package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"gw/edge/usage/usagetest"
	"gw/perf/mock"
)

// usageFile: a direct model, a group whose preferred target always fails
// (503 from the mock's path knob), and two exporters writing to a real
// OTLP receiver and a real S3-compatible server.
const usageFile = `_format_version: "1"
provider_keys:
  - display_name: pk
    provider: openai
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_USAGE_MOCK}/v1
    request: {forward_client_headers: ["x-mock-*"]}
    telemetry_tags: {kind: byo, byo_label: team-a}
  - display_name: broken
    api_key: ${E2E_OPENAI_KEY}
    api_base: ${E2E_USAGE_MOCK}/knobs/status=503/v1
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"], team_id: team-a, user_id: u-1, user_name: Ann}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: pk, cost: {input_per_1k: 1, output_per_1k: 2}}
  - {display_name: flaky, provider: openai, model_name: gpt-4o, provider_key: broken}
  - display_name: grp
    routing: {strategy: failover, targets: [{model: flaky, priority: 1}, {model: gpt}]}
  - {display_name: guarded, provider: openai, model_name: gpt-4o, provider_key: pk, cost: {input_per_1k: 1, output_per_1k: 2}}
guardrails:
  - name: no-codenames
    kind: keyword
    hook_point: input
    patterns: [{kind: literal, value: PROJECT-ZEUS}]
guardrail_attachments:
  - {guardrail_id: no-codenames, scope_type: model, scope_id: guarded}
observability_exporters:
  - name: otel
    kind: otlp_http
    endpoint: ${E2E_OTLP}
    compression: gzip
    batch_size: OTLP_BATCH
    flush_interval_ms: OTLP_FLUSH
  - name: archive
    kind: object_store
    provider: s3
    bucket: gw-usage
    prefix: usage
    endpoint: ${E2E_S3}
    region: us-east-1
    auth_mode: static
    access_key_id: ${E2E_S3_KEY}
    secret_access_key: ${E2E_S3_SECRET}
    batch_size: 50
    flush_interval_ms: 200
`

type usageEnv struct {
	gw   *proc
	otlp *usagetest.OTLPReceiver
	s3   *usagetest.S3Server
	sdk  openai.Client
}

func startUsage(t *testing.T, otlpBatch, otlpFlushMS string) *usageEnv {
	t.Helper()
	s3 := usagetest.StartS3(t, "gw-usage")
	rcv := usagetest.StartOTLP(t)
	startMock(t, "E2E_USAGE_MOCK", mock.Config{})
	for k, v := range map[string]string{"E2E_OTLP": rcv.URL, "E2E_S3": s3.Endpoint, "E2E_S3_KEY": usagetest.S3Key,
		"E2E_S3_SECRET": usagetest.S3Secret} {
		t.Setenv(k, v)
	}
	file := strings.NewReplacer("OTLP_BATCH", otlpBatch, "OTLP_FLUSH", otlpFlushMS).Replace(usageFile)
	g := startGW(t, writeTemp(t, "usage.yaml", file))
	return &usageEnv{gw: g, otlp: rcv, s3: s3,
		sdk: openai.NewClient(option.WithBaseURL("http://"+g.addr+"/v1"), option.WithAPIKey("caller-e2e"), option.WithMaxRetries(0))}
}

func (e *usageEnv) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, b := range e.s3.Objects(t) {
		usagetest.ValidateNDJSON(t, b)
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// usageMetrics returns gw's gw_usage_* and gw_otlp_* metric lines.
func usageMetrics(t *testing.T, addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "gw_usage_") || strings.HasPrefix(l, "gw_otlp_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func chatParams2(model string) openai.ChatCompletionNewParams {
	p := chatParams(model)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	return p
}

// TestUsageExportE2E: buffered, streamed, failed-over, failed mid-stream
// and caller-aborted requests through the real binary each produce exactly
// their records at the OTLP receiver and in the bucket, with the right
// fields, none twice.
func TestUsageExportE2E(t *testing.T) {
	e := startUsage(t, "50", "200")
	ctx := context.Background()
	const nBuf, nStream, nFailover, nBroken, nAbort, nGuardOK, nBlocked = 40, 30, 20, 10, 5, 10, 15
	for i := 0; i < nBuf; i++ {
		if _, err := e.sdk.Chat.Completions.New(ctx, chatParams("gpt")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < nStream; i++ {
		st := e.sdk.Chat.Completions.NewStreaming(ctx, chatParams2("gpt"))
		for st.Next() {
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < nFailover; i++ {
		if _, err := e.sdk.Chat.Completions.New(ctx, chatParams("grp")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < nGuardOK; i++ { // a guardrail runs and lets the request through
		if _, err := e.sdk.Chat.Completions.New(ctx, chatParams("guarded")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < nBlocked; i++ { // the keyword guardrail blocks the request before any upstream
		p := chatParams("guarded")
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me about PROJECT-ZEUS")}
		if _, err := e.sdk.Chat.Completions.New(ctx, p); err == nil {
			t.Fatal("a request naming PROJECT-ZEUS was not blocked")
		}
	}
	for i := 0; i < nBroken; i++ { // the upstream cuts the stream after 2 chunks
		st := e.sdk.Chat.Completions.NewStreaming(ctx, chatParams2("gpt"), option.WithHeader("x-mock-fail-after", "2"))
		for st.Next() {
		}
	}
	for i := 0; i < nAbort; i++ { // the caller leaves after the first chunk
		actx, cancel := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(actx, "POST", "http://"+e.gw.addr+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer caller-e2e")
		req.Header.Set("x-mock-chunks", "50")
		req.Header.Set("x-mock-chunk-delay", "50ms")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = bufio.NewReader(resp.Body).ReadString('\n')
		cancel()
		resp.Body.Close()
	}
	const want = nBuf + nStream + 2*nFailover + nBroken + nAbort + nGuardOK + nBlocked
	var recs []map[string]any
	usagetest.Eventually(t, 30*time.Second, "all records in the bucket", func() bool { recs = e.records(t); return len(recs) >= want })
	usagetest.Eventually(t, 10*time.Second, "all spans", func() bool { return len(e.otlp.Spans()) >= want })
	time.Sleep(500 * time.Millisecond) // nothing more may arrive
	recs = e.records(t)
	spans := e.otlp.Spans()
	if len(recs) != want || len(spans) != want {
		t.Fatalf("bucket %d records, OTLP %d spans; want %d each", len(recs), len(spans), want)
	}
	seen := map[string]bool{}
	count := map[string]int{}
	for _, r := range recs {
		id := r["event_id"].(string)
		if seen[id] {
			t.Fatalf("record %s delivered twice", id)
		}
		seen[id] = true
		if r["api_key_name"] != "dev" || r["team_id"] != "team-a" || r["user_id"] != "u-1" || r["user_name"] != "Ann" || r["inbound_protocol"] != "chat_completions" {
			t.Fatalf("attribution: %v", r)
		}
		status, kind, stream := r["status_code"].(float64), r["attempt_kind"], r["stream"] == true
		switch {
		case kind == "failed_attempt":
			count["failed"]++
			if status != 503 || r["target_model"] != "flaky" || r["total_tokens"] != nil || r["cost_usd"] != 0.0 || r["error_class"] == nil || r["model"] != "grp" {
				t.Fatalf("failed attempt: %v", r)
			}
		case r["model"] == "guarded":
			applied, _ := r["applied_guardrails"].([]any)
			if len(applied) != 1 || applied[0] != "no-codenames" {
				t.Fatalf("guarded request without its guardrail: %v", r)
			}
			hits, _ := r["guardrail_enforced_hits"].([]any)
			if status == 200 {
				count["guard_ok"]++
				if len(hits) != 0 || r["total_tokens"] == nil {
					t.Fatalf("guarded request let through: %v", r)
				}
				break
			}
			count["blocked"]++
			if len(hits) != 1 {
				t.Fatalf("blocked request: %v", r)
			}
			hit, _ := hits[0].(map[string]any)
			// Answered by gw itself: no upstream attempt (attempt 0), no target, no tokens.
			if status != 422 || hit["guardrail"] != "no-codenames" || hit["action"] != "block" || r["error_class"] != "guardrail_blocked" ||
				r["attempt"] != 0.0 || r["target_model"] != nil || r["total_tokens"] != nil || r["cost_usd"] != 0.0 || r["attempt_kind"] != "final" {
				t.Fatalf("blocked request: %v", r)
			}
		case status == 200:
			count["ok"]++
			tags, _ := r["telemetry_tags"].(map[string]any)
			if r["target_model"] != "gpt" || r["upstream_model"] == nil || r["total_tokens"] == nil || r["cost_usd"].(float64) <= 0 ||
				tags["byo_label"] != "team-a" || r["provider_key"] != "pk" || r["latency_ms"].(float64) <= 0 {
				t.Fatalf("success: %v", r)
			}
			if stream {
				count["stream"]++
				if r["ttft_ms"] == nil || r["upstream_ttft_ms"] == nil {
					t.Fatalf("stream without ttft: %v", r)
				}
			}
			if r["model"] == "grp" && r["attempt"] != 2.0 {
				t.Fatalf("failover final: %v", r)
			}
		case status == 502:
			count["broken"]++
			if !stream || r["error_class"] == nil || r["error_message"] == nil {
				t.Fatalf("mid-stream failure: %v", r)
			}
		case status == 499:
			count["abort"]++
			if r["error_class"] != "client_gone" {
				t.Fatalf("aborted: %v", r)
			}
		default:
			t.Fatalf("unexpected record %v", r)
		}
	}
	if count["failed"] != nFailover || count["ok"] != nBuf+nStream+nFailover || count["stream"] != nStream || count["broken"] != nBroken || count["abort"] != nAbort ||
		count["guard_ok"] != nGuardOK || count["blocked"] != nBlocked {
		t.Fatalf("record counts %v", count)
	}
	// The same records as spans: trace ID = request ID, span per event.
	spanIDs := map[string]bool{}
	for _, sp := range spans {
		spanIDs[hex.EncodeToString(sp.TraceId)+hex.EncodeToString(sp.SpanId)] = true
	}
	if len(spanIDs) != want {
		t.Fatalf("%d distinct spans; want %d", len(spanIDs), want)
	}
	var st struct {
		Exporters []struct {
			Name       string `json:"name"`
			SentEvents int    `json:"sent_events"`
		} `json:"exporters"`
	}
	getJSON(t, "http://"+e.gw.addr+"/status/exporters", &st)
	if len(st.Exporters) != 2 || st.Exporters[0].SentEvents != want || st.Exporters[1].SentEvents != want {
		t.Fatalf("/status/exporters %+v", st)
	}
	checkDashboard(t, e.gw.addr)
}

// checkDashboard: deploy/grafana/gw-dashboard.json loads as a dashboard
// and every gw series it queries is one this gw exposes after traffic
// (the guardrail series come with the guardrail engine).
func checkDashboard(t *testing.T, addr string) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/grafana/gw-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			GridPos struct{ X, Y, W, H int }
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard: %v", err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exposed, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	name := regexp.MustCompile(`\b(gw|process|go)_[a-z_]+`)
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Fatalf("panel %q: no query or off the grid", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				if strings.HasPrefix(m, "gw_guardrail_") {
					continue
				}
				if !bytes.Contains(exposed, []byte("\n"+m)) {
					t.Fatalf("panel %q queries %s, which gw does not expose", p.Title, m)
				}
			}
		}
	}
}

// TestUsageOutageAndShutdownE2E: the object store is down while requests
// run; its batches are retried and land once it is back. The OTLP
// exporter flushes only every 10 minutes: SIGTERM delivers its queue.
func TestUsageOutageAndShutdownE2E(t *testing.T) {
	e := startUsage(t, "8192", "600000")
	e.s3.Kill()
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		if _, err := e.sdk.Chat.Completions.New(ctx, chatParams("gpt")); err != nil {
			t.Fatal(err)
		}
	}
	var st struct {
		Exporters []struct {
			Name          string `json:"name"`
			FailedBatches int    `json:"failed_batches"`
			LastError     string `json:"last_error"`
			LastFailure   int64  `json:"last_failure_unix"`
		} `json:"exporters"`
	}
	usagetest.Eventually(t, 10*time.Second, "a failed batch", func() bool {
		getJSON(t, "http://"+e.gw.addr+"/status/exporters", &st)
		return len(st.Exporters) == 2 && st.Exporters[0].FailedBatches > 0
	})
	if ex := st.Exporters[0]; ex.Name != "exporter:archive" || ex.LastError == "" || ex.LastFailure == 0 {
		t.Fatalf("status %+v", st)
	}
	e.s3.Restart()
	usagetest.Eventually(t, 40*time.Second, "delivery after the outage", func() bool { return len(e.records(t)) == 20 })
	if n := len(e.otlp.Spans()); n != 0 {
		t.Fatalf("OTLP received %d spans before its flush interval", n)
	}
	// SIGTERM: the queued 20 records are flushed before exit.
	if err := e.gw.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.gw.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("gw did not exit after SIGTERM")
	}
	if n := len(e.otlp.Spans()); n != 20 {
		t.Fatalf("OTLP received %d spans at shutdown; want 20", n)
	}
	if len(e.records(t)) != 20 {
		t.Fatal("records were written twice")
	}
}

// TestUsageSinkFullE2E: a sink that cannot deliver (its receiver answers
// 503 with Retry-After) holds one batch and queues 8192 more records; every
// record past that is dropped and counted as sink_full, and the requests
// themselves never wait.
func TestUsageSinkFullE2E(t *testing.T) {
	rcv := usagetest.StartOTLP(t)
	rcv.FailWith(503, "30")
	startMock(t, "E2E_USAGE_MOCK", mock.Config{})
	t.Setenv("E2E_OTLP", rcv.URL)
	file := `_format_version: "1"
provider_keys:
  - {display_name: pk, api_key: "${E2E_OPENAI_KEY}", api_base: "${E2E_USAGE_MOCK}/v1"}
api_keys:
  - {display_name: dev, key_env: E2E_CALLER_KEY, allowed_models: ["*"]}
models:
  - {display_name: gpt, provider: openai, model_name: gpt-4o, provider_key: pk}
observability_exporters:
  - {name: stuck, kind: otlp_http, endpoint: "${E2E_OTLP}", batch_size: 1, flush_interval_ms: 100}
`
	g := startGW(t, writeTemp(t, "full.yaml", file), "--shutdown-grace", "1s")
	const n = 8400
	jobs := make(chan int)
	errs := make(chan error, 8)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for w := 0; w < 8; w++ {
		go func() {
			var err error
			for range jobs {
				if err != nil {
					continue
				}
				req, _ := http.NewRequest("POST", "http://"+g.addr+"/v1/chat/completions",
					strings.NewReader(`{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Authorization", "Bearer caller-e2e")
				resp, e := client.Do(req)
				if e != nil {
					err = e
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = errors.New("status " + resp.Status)
				}
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	for w := 0; w < 8; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	want := `gw_usage_event_drops_total{reason="sink_full"} ` + strconv.Itoa(n-1-8192)
	usagetest.Eventually(t, 10*time.Second, want, func() bool {
		resp, err := http.Get("http://" + g.addr + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Contains(string(b), want)
	})
	var st struct {
		Exporters []struct {
			Queued        int `json:"queued"`
			DroppedEvents int `json:"dropped_events"`
		} `json:"exporters"`
	}
	getJSON(t, "http://"+g.addr+"/status/exporters", &st)
	if len(st.Exporters) != 1 || st.Exporters[0].Queued != 8192 || st.Exporters[0].DroppedEvents != n-1-8192 {
		t.Fatalf("/status/exporters %+v", st)
	}
}

// TestUsageReloadUnderLoadE2E: SIGHUPs that change the exporters' settings
// while requests flow, then SIGTERM: every request's record reaches both
// sinks exactly once.
func TestUsageReloadUnderLoadE2E(t *testing.T) {
	e := startUsage(t, "50", "200")
	// startUsage wrote the file; rewrite it in place through its path.
	var file string
	for i, a := range e.gw.cmd.Args {
		if a == "--resources-file" {
			file = e.gw.cmd.Args[i+1]
		}
	}
	variants := []string{
		strings.NewReplacer("OTLP_BATCH", "7", "OTLP_FLUSH", "100").Replace(usageFile),
		strings.NewReplacer("OTLP_BATCH", "50", "OTLP_FLUSH", "200").Replace(strings.Replace(usageFile, "batch_size: 50", "batch_size: 13", 1)),
	}
	const n = 300
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for i := 0; i < n; i++ {
			if _, err := e.sdk.Chat.Completions.New(ctx, chatParams("gpt")); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < 6; i++ {
		time.Sleep(150 * time.Millisecond)
		if err := os.WriteFile(file, []byte(variants[i%2]), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := e.gw.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := e.gw.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- e.gw.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("gw did not exit")
	}
	if !strings.Contains(e.gw.stderr.String(), `"msg":"resource snapshot applied","trigger":"sighup"`) {
		t.Fatal("no reload was applied")
	}
	recs := e.records(t)
	seen := map[string]bool{}
	for _, r := range recs {
		id := r["event_id"].(string)
		if seen[id] {
			t.Fatalf("record %s written twice", id)
		}
		seen[id] = true
	}
	spans := map[string]bool{}
	for _, sp := range e.otlp.Spans() {
		spans[hex.EncodeToString(sp.TraceId)] = true
	}
	if len(recs) != n || len(spans) != n || len(e.otlp.Spans()) != n {
		t.Fatalf("bucket %d records, OTLP %d spans (%d distinct); want %d", len(recs), len(e.otlp.Spans()), len(spans), n)
	}
}

// TestUsageMixAtScaleE2E: 10,000 concurrent requests — plain, failed over,
// guardrail-passed and guardrail-blocked — each leave exactly their records
// at both sinks (no loss, no duplicate) and the right count of each kind.
func TestUsageMixAtScaleE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 requests")
	}
	e := startUsage(t, "500", "200")
	ctx := context.Background()
	const total, workers = 10000, 8
	// Request i is: blocked when i%10 == 0, guarded-and-passed when
	// i%10 == 1, failed over (two records) when i%10 == 2, plain otherwise.
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += workers {
				var err error
				switch i % 10 {
				case 0:
					p := chatParams("guarded")
					p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("PROJECT-ZEUS status?")}
					if _, err = e.sdk.Chat.Completions.New(ctx, p); err == nil {
						err = errors.New("a request naming PROJECT-ZEUS was not blocked")
					} else {
						err = nil
					}
				case 1:
					_, err = e.sdk.Chat.Completions.New(ctx, chatParams("guarded"))
				case 2:
					_, err = e.sdk.Chat.Completions.New(ctx, chatParams("grp"))
				default:
					_, err = e.sdk.Chat.Completions.New(ctx, chatParams("gpt"))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const nBlocked, nGuardOK, nFailover = total / 10, total / 10, total / 10
	const want = total + nFailover
	var recs []map[string]any
	// Each look downloads every object, so look every half second, and on
	// a timeout say how far it got and what gw counted (drops or slowness).
	deadline := time.Now().Add(90 * time.Second)
	for recs = e.records(t); len(recs) < want || len(e.otlp.Spans()) < want; recs = e.records(t) {
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s: bucket %d records, OTLP %d spans; want %d each; gw's usage metrics:\n%s", len(recs), len(e.otlp.Spans()), want, usageMetrics(t, e.gw.addr))
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // nothing more may arrive
	recs = e.records(t)
	spans := e.otlp.Spans()
	if len(recs) != want || len(spans) != want {
		t.Fatalf("bucket %d records, OTLP %d spans; want %d each", len(recs), len(spans), want)
	}
	seen := make(map[string]bool, want)
	count := map[string]int{}
	for _, r := range recs {
		id := r["event_id"].(string)
		if seen[id] {
			t.Fatalf("record %s delivered twice", id)
		}
		seen[id] = true
		status := r["status_code"].(float64)
		switch {
		case r["attempt_kind"] == "failed_attempt":
			count["failed"]++
		case r["model"] == "guarded" && status == 422 && r["error_class"] == "guardrail_blocked":
			count["blocked"]++
		case r["model"] == "guarded" && status == 200:
			count["guard_ok"]++
		case r["model"] == "grp" && status == 200:
			count["failover"]++
		case r["model"] == "gpt" && status == 200:
			count["plain"]++
		default:
			t.Fatalf("unexpected record %v", r)
		}
	}
	wantCount := map[string]int{"failed": nFailover, "blocked": nBlocked, "guard_ok": nGuardOK, "failover": nFailover,
		"plain": total - nBlocked - nGuardOK - nFailover}
	for k, v := range wantCount {
		if count[k] != v {
			t.Fatalf("record counts %v; want %v", count, wantCount)
		}
	}
	spanIDs := make(map[string]bool, want)
	for _, sp := range spans {
		spanIDs[hex.EncodeToString(sp.TraceId)+hex.EncodeToString(sp.SpanId)] = true
	}
	if len(spanIDs) != want {
		t.Fatalf("%d distinct spans; want %d", len(spanIDs), want)
	}
}
