package edge

import (
	"strconv"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/puzpuzpuz/xsync/v3"
	"github.com/valyala/fasthttp"

	"gw/admin"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/usage"
)

var (
	hdrOverhead = []byte("x-gw-overhead-us")

	e2eDown   = metrics.NewPrometheusHistogram(`gw_request_e2e_latency_seconds{side="downstream"}`)
	e2eUp     = metrics.NewPrometheusHistogram(`gw_request_e2e_latency_seconds{side="upstream"}`)
	ttftDown  = metrics.NewPrometheusHistogram(`gw_request_ttft_seconds{side="downstream"}`)
	ttftUp    = metrics.NewPrometheusHistogram(`gw_request_ttft_seconds{side="upstream"}`)
	llmTTFTDn = metrics.NewPrometheusHistogram(`gw_llm_time_to_first_token_seconds{side="downstream"}`)
	llmTTFTUp = metrics.NewPrometheusHistogram(`gw_llm_time_to_first_token_seconds{side="upstream"}`)
	overheadH = metrics.NewPrometheusHistogram(`gw_request_overhead_seconds`)
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
	// What the caller receives, also when gw answered itself (an early
	// failure writes an error body and no upstream bytes).
	c.respBytes = len(ctx.Response.Body())
	// A stream that failed before its first byte is still a stream request
	// (access log and usage record say so).
	p.record(c, ctx.Method(), ctx.Path(), requestBytes(ctx, c), c.cr.Stream)
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
	now := time.Now()
	total := now.Sub(c.start)
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
	if p.Usage != nil && c.plan != nil && !c.noUsage {
		p.emitUsage(c, stream, reqBytes, now)
	}
}

// emitUsage sends one zero-token record per failed attempt (but the last,
// whose outcome is the final record) and then the final record. Each
// record is built in its slot of the pipeline's queue; nothing is encoded
// here.
func (p *Proxy) emitUsage(c *call, stream bool, reqBytes int, now time.Time) {
	n := c.nFailures
	finalMsg := ""
	if n > c.memberFs && c.status >= 400 && c.failures[n-1].target == c.target {
		n-- // the last failure is the final outcome
		finalMsg = c.failures[n].msg
	}
	id := usage.NewRequestID() // one request: the same ID on all its records
	for i := 0; i < n; i++ {
		f := &c.failures[i]
		p.emitRecord(c, id, stream, func(e *UsageEvent) {
			e.OccurredAt, e.AttemptKind, e.Attempt = f.at, AttemptFailed, i+1
			setTarget(e, f.target)
			e.StatusCode, e.ErrorClass, e.ErrorMessage = f.status, f.class, f.msg
		})
	}
	p.emitRecord(c, id, stream, func(e *UsageEvent) { fillFinal(e, c, reqBytes, now, finalMsg) })
}

// fillFinal fills the final record's own fields: the call's outcome,
// latency split, target, guardrails, tokens and cost.
func fillFinal(e *UsageEvent, c *call, reqBytes int, now time.Time, finalMsg string) {
	e.OccurredAt, e.AttemptKind, e.Attempt = now, AttemptFinal, c.attempts
	e.StatusCode, e.ErrorClass, e.ErrorMessage = c.status, c.errClass, finalMsg
	e.Latency, e.TTFT, e.UpstreamLatency, e.UpstreamTTFT = now.Sub(c.start), c.ttfb, c.upstreamDur, c.upTTFT
	e.RequestBodyBytes, e.ResponseBodyBytes = int64(reqBytes), int64(c.respBytes)
	setTarget(e, c.target)
	if c.g.on {
		// The guardrail outcome is the request's: on the final record only,
		// copied out of the pooled request state.
		o := &c.g.e.Outcome
		usage.SetGuardrails(e, o.Applied, o.Enforced, o.Monitor, o.BypassedReason, o.BlockedFailClosed)
	}
	if c.haveUsage {
		u := c.usage
		e.PromptTokens, e.CompletionTokens, e.ReasoningTokens, e.CachedPromptTokens, e.TotalTokens = u.Prompt, u.Completion, u.Reasoning, u.Cached, u.Total
		if c.target != nil && c.target.Model.Cost != nil {
			cost := c.target.Model.Cost
			e.CostUSD = usage.Cost(u.Prompt, u.Completion, u.Reasoning, u.Total, cost.InputPer1K, cost.OutputPer1K)
		}
	}
	if c.up != nil { // transcriptions and translations (upload.go)
		e.AudioSeconds = c.up.seconds
	}
	if a := &c.addUsage; a.Total > 0 || c.addCost > 0 { // ensemble members (ensemble.go)
		e.PromptTokens += a.Prompt
		e.CompletionTokens += a.Completion
		e.ReasoningTokens += a.Reasoning
		e.CachedPromptTokens += a.Cached
		e.TotalTokens += a.Total
		e.CostUSD += c.addCost
	}
}

// emitRecord builds one record of the call in its slot of the pipeline's
// queue: the fields every record of the call shares, then fill's.
func (p *Proxy) emitRecord(c *call, id usage.RequestID, stream bool, fill func(*UsageEvent)) {
	s, ok := p.Usage.Claim()
	if !ok {
		return
	}
	// A panic while filling must not leave the slot claimed: the
	// dispatcher would wait at it for good.
	defer p.Usage.Publish(s)
	setCaller(s.Record, c, id, stream)
	fill(s.Record)
}

// setCaller fills the fields every record of the call shares: its ID,
// the caller's attribution and the request's classification.
func setCaller(e *UsageEvent, c *call, id usage.RequestID, stream bool) {
	k := c.caller.Key
	e.RequestID = id
	e.APIKeyID, e.APIKeyName, e.TeamID, e.UserID, e.UserName = k.ID, k.DisplayName, k.TeamID, k.UserID, k.UserName
	e.Model, e.Stream, e.InboundProtocol, e.Operation = c.plan.Alias, stream, c.surf.protocol, c.surf.operation
	e.CacheStatus = c.cacheUsage()
}

// setTarget fills the record's routing fields from the direct model that
// served the attempt (nil: none was reached).
func setTarget(e *UsageEvent, t *snapshot.Plan) {
	if t == nil {
		return
	}
	e.TargetModel, e.UpstreamModel, e.ProviderKey = t.Alias, t.UpstreamModel, t.Model.ProviderKeyName
	if pk := t.Model.ProviderKey; pk != nil {
		e.Provider, e.ProviderKeyID = pk.Provider, pk.ID
		if pk.TelemetryTags != (resources.TelemetryTags{}) {
			e.Tags = &pk.TelemetryTags
		}
	}
}
