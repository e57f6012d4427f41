//go:build !race

package edge

import (
	"testing"
	"time"

	"gw/adapters"
	"gw/edge/usage/usagetest"
)

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
