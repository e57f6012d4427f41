package edge

import (
	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/limiter"
	"gw/sse/rawjson"
)

// Scopes that keep the counters of a caller key and of a model apart from
// the rate_limit_policies counters of the same subject.
const (
	scopeKeyLimit   = limiter.ScopeKey
	scopeModelLimit = "model"
)

// defaultOutputEstimate is the completion budget assumed for a token-limited
// request that sets neither max_tokens nor max_completion_tokens.
const defaultOutputEstimate = 4096

// admit applies the caller key's and the model's rate_limit and every
// matching rate_limit_policies entry: request windows are charged, token
// windows get the request's estimate reserved (settled with the upstream's
// usage when the request ends), and concurrency slots are taken. On refusal
// it answers 429 and returns false.
func (p *Proxy) admit(ctx *fasthttp.RequestCtx, c *call) bool {
	if p.Limiter == nil {
		return true
	}
	key, plan := c.caller.Key, c.plan
	r := &c.res
	tokens := false
	if rl := key.RateLimit; rl != nil {
		r.AddLimits(limiter.Subject{Scope: scopeKeyLimit, ID: key.ID}, limiter.Limits(*rl))
		tokens = tokens || rl.TPM > 0 || rl.TPD > 0
	}
	if rl := plan.Model.RateLimit; rl != nil {
		r.AddLimits(limiter.Subject{Scope: scopeModelLimit, ID: plan.ID}, limiter.Limits(*rl))
		tokens = tokens || rl.TPM > 0 || rl.TPD > 0
	}
	for _, pol := range c.snap.Resources.RateLimitPolicies {
		subj, ok := pol.Subject(plan.Alias, key)
		if !ok {
			continue
		}
		if pol.Scope == resources.RateScopeModel {
			subj = plan.ID // counters keyed by derived ID, like the model's own limits
		}
		s := limiter.Subject{Scope: pol.ID, ID: subj}
		if pol.MaxRequests > 0 {
			if k, ok := limiter.WindowKind(pol.Window(), false); ok {
				r.Add(s, k, pol.MaxRequests)
			}
		}
		if pol.MaxTokens > 0 {
			if k, ok := limiter.WindowKind(pol.Window(), true); ok {
				r.Add(s, k, pol.MaxTokens)
				tokens = true
			}
		}
	}
	var est int64
	if tokens {
		est = estimateTokens(c.body, max(len(c.body), len(c.origBody)))
		if c.surf.noOutput { // embeddings, rerank: no completion budget
			est = int64(max(1, max(len(c.body), len(c.origBody))/4))
		}
	}
	if r.Len() > 0 {
		c.limited = true
		d := p.Limiter.Reserve(r, est)
		c.hdrBuf = d.AppendHeaders(c.hdrBuf[:0], ctx.Response.Header.SetBytesKV)
		if !d.Allowed {
			p.refuse(ctx, c, &d)
			return false
		}
	}
	for _, lim := range [...]struct {
		slot *limiter.Slot
		sub  limiter.Subject
		rl   *resources.RateLimit
	}{{&c.keySlot, limiter.Subject{Scope: scopeKeyLimit, ID: key.ID}, key.RateLimit}, {&c.modelSlot, limiter.Subject{Scope: scopeModelLimit, ID: plan.ID}, plan.Model.RateLimit}} {
		if lim.rl == nil || lim.rl.Concurrency <= 0 {
			continue
		}
		if d := p.Limiter.Acquire(lim.slot, lim.sub, lim.rl.Concurrency); !d.Allowed {
			p.refuse(ctx, c, &d)
			return false
		}
	}
	return true
}

// refuse answers 429 in the OpenAI shape with Retry-After and the
// x-ratelimit-* headers of the tripped limit.
func (p *Proxy) refuse(ctx *fasthttp.RequestCtx, c *call, d *limiter.Decision) {
	msg := d.Message()
	c.surf.writeError(ctx, fasthttp.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", msg)
	c.hdrBuf = d.AppendHeaders(c.hdrBuf[:0], ctx.Response.Header.SetBytesKV)
	c.errClass = "rate_limited"
}

// settleLimits settles the token reservation with the upstream's reported
// usage (0 when the request failed) and frees concurrency slots. Idempotent.
func (p *Proxy) settleLimits(c *call) {
	if !c.limited && !c.keySlot.Held() && !c.modelSlot.Held() {
		return
	}
	if c.limited {
		var used int64
		if c.haveUsage {
			used = c.usage.Total
			if used == 0 {
				used = c.usage.Prompt + c.usage.Completion
			}
		}
		used += c.addUsage.Total // ensemble members (ensemble.go)
		p.Limiter.Settle(&c.res, used)
	}
	c.keySlot.Release()
	c.modelSlot.Release()
}

// estimateTokens is the token reservation of a request: the prompt size
// (promptBytes / 4, an upper bound for text; the caller's body size) plus
// the completion budget of the chat body (max_completion_tokens, else
// max_tokens, else defaultOutputEstimate).
func estimateTokens(body []byte, promptBytes int) int64 {
	for _, k := range [...]string{"max_completion_tokens", "max_tokens"} {
		if v, kind, ok := rawjson.Get(body, k); ok && kind == rawjson.Number {
			if n, ok := rawjson.ParseInt(v); ok && n > 0 {
				return int64(promptBytes/4) + n
			}
		}
	}
	return int64(promptBytes/4) + defaultOutputEstimate
}
