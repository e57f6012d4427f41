//go:build !race

package edge

import (
	"testing"
	"time"

	"gw/adapters"
	"gw/edge/usage/usagetest"
)

const usageAllocSrc = `_format_version: "1"
provider_keys:
  - {display_name: good, api_key: "${K}", api_base: "http://127.0.0.1:1/v1", telemetry_tags: {kind: byo, byo_label: lab}}
api_keys:
  - {display_name: caller, key_env: CALLER, allowed_models: ["*"], team_id: t1, user_name: Ann}
models:
  - {display_name: b, provider: openai, model_name: m-b, provider_key: good, cost: {input_per_1k: 1, output_per_1k: 2}}
`

// TestEmitUsageAllocs: a request's usage records (one failed attempt and
// the final one) cost no allocation on the request path.
func TestEmitUsageAllocs(t *testing.T) {
	s := compileFile(t, usageAllocSrc, map[string]string{"K": "sk", "CALLER": "caller-key"})
	p := &Proxy{Usage: NewUsageStream()}
	defer p.Usage.Close(usageGrace)
	c := acquireCall()
	c.plan, c.target, c.caller, c.surf = s.Plans["b"], s.Plans["b"], s.CallersByName["caller"], surfChat
	c.start, c.status, c.attempts, c.haveUsage = time.Now(), 200, 2, true
	c.usage = adapters.Usage{Prompt: 10, Completion: 20, Total: 30}
	c.failures[0] = failedAttempt{at: time.Now(), target: c.target, status: 503, class: "upstream_status", msg: "upstream returned 503"}
	c.nFailures = 1
	if n := testing.AllocsPerRun(1000, func() { p.emitUsage(c, false, 100, time.Now()) }); n != 0 {
		t.Fatalf("emitUsage allocates %v per request; want 0", n)
	}
}

// BenchmarkEmitUsage is the request path's cost of one final record
// (issue 17: ≤ 200 ns, 0 allocs).
func BenchmarkEmitUsage(b *testing.B) {
	s := compileFile(b, usageAllocSrc, map[string]string{"K": "sk", "CALLER": "caller-key"})
	p := &Proxy{Usage: NewUsageStream()}
	defer p.Usage.Close(usageGrace)
	c := acquireCall()
	c.plan, c.target, c.caller, c.surf = s.Plans["b"], s.Plans["b"], s.CallersByName["caller"], surfChat
	c.start, c.status, c.attempts, c.haveUsage = time.Now(), 200, 1, true
	c.usage = adapters.Usage{Prompt: 10, Completion: 20, Total: 30}
	now := time.Now()
	usagetest.EmitBench(b, p.Usage, func() { p.emitUsage(c, false, 100, now) })
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
