package edge

import (
	"strconv"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/puzpuzpuz/xsync/v3"
	"github.com/valyala/fasthttp"

	"gw/admin"
	"gw/edge/guard"
)

var (
	hdrOverhead = []byte("x-gw-overhead-us")

	e2eDown   = metrics.NewHistogram(`gw_request_e2e_latency_seconds{side="downstream"}`)
	e2eUp     = metrics.NewHistogram(`gw_request_e2e_latency_seconds{side="upstream"}`)
	ttftDown  = metrics.NewHistogram(`gw_request_ttft_seconds{side="downstream"}`)
	ttftUp    = metrics.NewHistogram(`gw_request_ttft_seconds{side="upstream"}`)
	llmTTFTDn = metrics.NewHistogram(`gw_llm_time_to_first_token_seconds{side="downstream"}`)
	llmTTFTUp = metrics.NewHistogram(`gw_llm_time_to_first_token_seconds{side="upstream"}`)
	overheadH = metrics.NewHistogram(`gw_request_overhead_seconds`)
)

// requestCounters caches gw_requests_total{model,status} handles so that the
// hot path never builds a metric name twice.
var requestCounters = xsync.NewMapOf[counterKey, *metrics.Counter]()

type counterKey struct {
	model  string
	status int
}

func countRequest(model string, status int) {
	k := counterKey{model, status}
	if c, ok := requestCounters.Load(k); ok {
		c.Inc()
		return
	}
	// Slow path - first request of this (model, status).
	c, _ := requestCounters.LoadOrCompute(k, func() *metrics.Counter {
		return metrics.GetOrCreateCounter(`gw_requests_total{model="` + admin.EscapeLabelValue(model) + `",status="` + strconv.Itoa(status) + `"}`)
	})
	c.Inc()
}

// overheadMicros is the time spent inside gw so far, excluding upstream waits.
func overheadMicros(c *call) int64 {
	d := time.Since(c.start) - c.upstreamDur
	if d < 0 {
		d = 0
	}
	return d.Microseconds()
}

// setOverhead writes x-gw-overhead-us on the response about to be sent.
func setOverhead(ctx *fasthttp.RequestCtx, c *call) {
	var buf [20]byte
	ctx.Response.Header.SetBytesKV(hdrOverhead, strconv.AppendInt(buf[:0], overheadMicros(c), 10))
}

// finish completes a buffered (or rejected) call: overhead header, metrics,
// access log, release.
func (p *Proxy) finish(ctx *fasthttp.RequestCtx, c *call, status int) {
	setOverhead(ctx, c)
	c.status = status
	p.record(c, ctx.Method(), ctx.Path(), len(ctx.Request.Body()), false)
	releaseCall(c)
}

// record updates metrics and writes the access-log line of a finished call.
func (p *Proxy) record(c *call, method, path []byte, reqBytes int, stream bool) {
	if p.Limiter != nil {
		p.settleLimits(c)
	}
	if c.g.on {
		p.logGuardErr(c) // a stream window's failed check, not logged yet
	}
	alias := ""
	if c.plan != nil {
		alias = c.plan.Alias
	}
	countRequest(alias, c.status)
	total := time.Since(c.start)
	e2eDown.Update(total.Seconds())
	overheadH.Update((total - c.upstreamDur).Seconds())
	if c.upstreamDur > 0 {
		e2eUp.Update(c.upstreamDur.Seconds())
	}
	if c.ttfb > 0 {
		ttftDown.Update(c.ttfb.Seconds())
		if stream {
			llmTTFTDn.Update(c.ttfb.Seconds())
		}
	}
	if c.upTTFT > 0 {
		ttftUp.Update(c.upTTFT.Seconds())
		if stream {
			llmTTFTUp.Update(c.upTTFT.Seconds())
		}
	}
	if p.Log != nil {
		p.Log.line(c, method, path, c.status, reqBytes, stream)
	}
	if p.Usage != nil && c.plan != nil {
		p.emitUsage(c, stream)
	}
}

// emitUsage sends one zero-token record per failed attempt (but the last,
// whose outcome is the final record) and then the final record.
func (p *Proxy) emitUsage(c *call, stream bool) {
	ev := UsageEvent{
		APIKeyID: c.caller.Key.ID, APIKeyName: c.caller.Key.DisplayName, TeamID: c.caller.Key.TeamID, UserID: c.caller.Key.UserID,
		Model: c.plan.Alias, Stream: stream, InboundProtocol: c.surf.protocol, Operation: c.surf.operation,
	}
	n := c.nFailures
	if n > 0 && c.status >= 400 && c.failures[n-1].target == c.target {
		n-- // the last failure is the final outcome
	}
	for i := 0; i < n; i++ {
		f := &c.failures[i]
		e := ev
		e.OccurredAt, e.AttemptKind, e.Attempt = f.at, AttemptFailed, i+1
		e.TargetModel, e.ProviderKey = f.target.Alias, f.target.Model.ProviderKeyName
		e.StatusCode, e.ErrorClass, e.ErrorMessage = f.status, f.class, f.msg
		p.Usage.Emit(e)
	}
	e := ev
	e.OccurredAt, e.AttemptKind, e.Attempt = time.Now(), AttemptFinal, c.attempts
	if c.g.on {
		o := &c.g.e.Outcome
		e.AppliedGuardrails = append([]string(nil), o.Applied...)
		if len(o.Enforced) > 0 {
			e.GuardrailEnforcedHits = append([]guard.Hit(nil), o.Enforced...)
		}
		if len(o.Monitor) > 0 {
			e.GuardrailMonitorHits = append([]guard.Hit(nil), o.Monitor...)
		}
		e.GuardrailBypassedReason, e.GuardrailBlockedFailClosed = o.BypassedReason, o.BlockedFailClosed
	}
	e.StatusCode, e.ErrorClass, e.Latency = c.status, c.errClass, time.Since(c.start)
	if c.target != nil {
		e.TargetModel, e.ProviderKey = c.target.Alias, c.target.Model.ProviderKeyName
	}
	if c.haveUsage {
		u := c.usage
		e.PromptTokens, e.CompletionTokens, e.ReasoningTokens, e.CachedTokens, e.TotalTokens = u.Prompt, u.Completion, u.Reasoning, u.Cached, u.Total
		if c.target != nil && c.target.Model.Cost != nil {
			cost := c.target.Model.Cost
			out := u.Completion
			if u.Total > 0 && u.Prompt+u.Completion+u.Reasoning == u.Total {
				out += u.Reasoning // reasoning reported outside completion: billed in full too
			}
			e.CostUSD = float64(u.Prompt)/1000*cost.InputPer1K + float64(out)/1000*cost.OutputPer1K
		}
	}
	p.Usage.Emit(e)
}
