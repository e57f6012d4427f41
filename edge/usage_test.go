package edge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"gw/admin/snapshot"
	"gw/edge/usage"
)

// usageAllocSrc is a caller and a model with cost and telemetry tags:
// what a usage record reads.
const usageAllocSrc = `_format_version: "1"
provider_keys:
  - {display_name: good, api_key: "${K}", api_base: "http://127.0.0.1:1/v1", telemetry_tags: {kind: byo, byo_label: lab}}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"], team_id: t1, user_name: Ann}
models:
  - {display_name: b, provider: openai, model_name: m-b, provider_key: good, cost: {input_per_1k: 1, output_per_1k: 2}}
`

type collectSink struct {
	mu  sync.Mutex
	evs []UsageEvent
}

func (s *collectSink) AppendRecord(body []byte, r *UsageEvent) []byte {
	s.mu.Lock()
	s.evs = append(s.evs, *r)
	s.mu.Unlock()
	return body
}

func (s *collectSink) Finish(dst, _ []byte, _ int) ([]byte, error) { return dst, nil }

func (s *collectSink) Send(context.Context, *usage.Batch) error { return nil }

func (s *collectSink) spec() usage.SinkSpec {
	return usage.SinkSpec{Config: usage.SinkConfig{Name: "collect", Kind: "test", BatchSize: 1, FlushInterval: time.Millisecond},
		Build: func() (usage.Sink, error) { return s, nil }}
}

func (s *collectSink) wait(t *testing.T, n int) []UsageEvent {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		got := append([]UsageEvent(nil), s.evs...)
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("got fewer than %d usage events", n)
	return nil
}

func TestUsageEventsPerAttempt(t *testing.T) {
	base := startMock(t)
	env := map[string]string{"K": "sk", "CALLER": "caller-key", "BASE": base}
	src := `_format_version: "1"
provider_keys:
  - {display_name: bad, api_key: "${K}", api_base: "${BASE}/knobs/status=503/v1"}
  - {display_name: good, api_key: "${K}", api_base: "${BASE}/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"], team_id: t1}
models:
  - {display_name: a, provider: openai, model_name: m-a, provider_key: bad, retries: 1}
  - {display_name: b, provider: openai, model_name: m-b, provider_key: good, cost: {input_per_1k: 1, output_per_1k: 2}}
  - display_name: grp
    routing: {targets: [{model: a}, {model: b}]}
`
	s := compileFile(t, src, env)
	h := &snapshot.Holder{}
	h.Store(s)
	sink := &collectSink{}
	us := NewUsageStream()
	us.SetSinks([]usage.SinkSpec{sink.spec()})
	defer us.Close(usageGrace)
	p := &Proxy{Holder: h, Usage: us}

	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	ctx.Request.SetBody([]byte(`{"model":"grp","messages":[{"role":"user","content":"hi"}]}`))
	p.Handle(&ctx)
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("status %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	evs := sink.wait(t, 3)
	// a fails twice (retries: 1) with 503, then b answers.
	if len(evs) != 3 {
		t.Fatalf("events: %+v", evs)
	}
	for i := 0; i < 2; i++ {
		e := evs[i]
		if e.AttemptKind != AttemptFailed || e.TargetModel != "a" || e.StatusCode != 503 || e.TotalTokens != 0 || e.CostUSD != 0 {
			t.Fatalf("failed attempt %d: %+v", i, e)
		}
	}
	f := evs[2]
	if f.AttemptKind != AttemptFinal || f.TargetModel != "b" || f.StatusCode != 200 || f.Attempt != 3 || f.TotalTokens == 0 || f.CostUSD <= 0 || f.TeamID != "t1" || f.Model != "grp" {
		t.Fatalf("final: %+v", f)
	}
}

// TestUsageEarlyFailureSizes: a request that fails before any upstream
// answer is recorded with the size of the error body gw wrote and of the
// caller's body, and as a stream when the caller asked for one.
func TestUsageEarlyFailureSizes(t *testing.T) {
	base := startMock(t)
	src := `_format_version: "1"
provider_keys:
  - {display_name: bad, api_key: "${K}", api_base: "${BASE}/knobs/status=503/v1"}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"]}
models:
  - {display_name: a, provider: openai, model_name: m-a, provider_key: bad}
`
	s := compileFile(t, src, map[string]string{"K": "sk", "CALLER": "caller-key", "BASE": base})
	h := &snapshot.Holder{}
	h.Store(s)
	sink := &collectSink{}
	us := NewUsageStream()
	us.SetSinks([]usage.SinkSpec{sink.spec()})
	defer us.Close(usageGrace)
	p := &Proxy{Holder: h, Usage: us}
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/chat/completions")
	ctx.Request.Header.Set("Authorization", "Bearer caller-key")
	body := `{"model":"a","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	ctx.Request.SetBody([]byte(body))
	p.Handle(&ctx)
	if ctx.Response.StatusCode() < 500 {
		t.Fatalf("status %d", ctx.Response.StatusCode())
	}
	evs := sink.wait(t, 1)
	f := evs[len(evs)-1]
	if f.AttemptKind != AttemptFinal || f.ResponseBodyBytes != int64(len(ctx.Response.Body())) || f.ResponseBodyBytes == 0 ||
		f.RequestBodyBytes != int64(len(body)) || !f.Stream || f.ErrorClass == "" {
		t.Fatalf("final record %+v (response body %d bytes)", f, len(ctx.Response.Body()))
	}
}

// TestEmitUsagePanicPublishes: a record whose filling panics is still
// published (partly filled), so the dispatcher, which reads the queue in
// order, is not left waiting at its slot and later records flow.
func TestEmitUsagePanicPublishes(t *testing.T) {
	s := compileFile(t, usageAllocSrc, map[string]string{"K": "sk", "CALLER": "caller-key"})
	p := &Proxy{Usage: NewUsageStream()}
	defer p.Usage.Close(usageGrace)
	seen := make(chan int, 4)
	p.Usage.Observe(func(r *UsageEvent) { seen <- r.StatusCode })
	c := acquireCall()
	c.plan, c.target, c.surf, c.status, c.attempts = s.Plans["b"], s.Plans["b"], surfChat, 200, 1
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no caller: emitUsage did not panic")
			}
		}()
		p.emitUsage(c, false, 1, time.Now()) // c.caller is nil
	}()
	c.caller, c.status = s.CallersByName["caller"], 201
	p.emitUsage(c, false, 1, time.Now())
	for _, want := range []int{0, 201} { // the first panicked before its status
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("record status %d, want %d", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("record with status %d never reached the dispatcher", want)
		}
	}
}

// TestEmitUsageRecordsShareRequest: a request's failed-attempt and final
// records carry the same request ID (sinks and billing group by it), the
// shared fields, and their own attempt fields.
func TestEmitUsageRecordsShareRequest(t *testing.T) {
	s := compileFile(t, usageAllocSrc, map[string]string{"K": "sk", "CALLER": "caller-key"})
	p := &Proxy{Usage: NewUsageStream()}
	defer p.Usage.Close(usageGrace)
	seen := make(chan UsageEvent, 4)
	p.Usage.Observe(func(r *UsageEvent) { seen <- *r })
	c := acquireCall()
	c.plan, c.target, c.caller, c.surf = s.Plans["b"], s.Plans["b"], s.CallersByName["caller"], surfChat
	c.start, c.status, c.attempts = time.Now(), 200, 3
	for i := range 2 {
		c.failures[i] = failedAttempt{at: time.Now(), target: c.target, status: 503 + i, class: "upstream_status", msg: "upstream returned 50x"}
	}
	c.nFailures = 2
	p.emitUsage(c, false, 100, time.Now())
	var recs []UsageEvent
	for range 3 {
		select {
		case r := <-seen:
			recs = append(recs, r)
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 3 records arrived", len(recs))
		}
	}
	for i, r := range recs {
		kind, status, body := AttemptFailed, 503+i, int64(0)
		if i == 2 {
			kind, status, body = AttemptFinal, 200, 100
		}
		if r.RequestID != recs[0].RequestID || r.APIKeyName != "caller" || r.Model != "b" ||
			r.AttemptKind != kind || r.StatusCode != status || r.RequestBodyBytes != body {
			t.Fatalf("record %d: %+v (first record's request ID %v)", i, r, recs[0].RequestID)
		}
	}
}
