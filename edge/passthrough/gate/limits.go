package gate

import (
	"github.com/valyala/fasthttp"

	"gw/admin/resources"
	"gw/limiter"
)

// Limits is one call's charge against the caller key's rate_limit and
// the rate_limit_policies that match it (spec "api_keys" rate_limit,
// "rate_limit_policies"). Agent traffic has no model and no token count:
// only request windows (rps, rpm, rph, rpd; a policy's max_requests) and
// the key's concurrency apply. A policy with scope model or a models
// condition never matches (there is no model), and token windows
// (tpm, tpd, max_tokens) are not charged. Keep one in the call's pooled
// state; the zero value is ready.
type Limits struct {
	res  limiter.Reservation
	slot limiter.Slot
	dec  limiter.Decision
	held bool
	hdr  []byte
}

// Admit charges the call to key's windows; on refusal it answers 429 with
// gw's envelope (write, when not nil, writes the surface's own body
// instead) and the x-ratelimit-* and Retry-After headers, and returns
// false. l nil: no limits. An admitted call must be Released.
func (a *Limits) Admit(ctx *fasthttp.RequestCtx, l *limiter.Limiter, policies []*resources.RateLimitPolicy, key *resources.APIKey,
	write func(ctx *fasthttp.RequestCtx, status int, msg string)) bool {
	if l == nil {
		return true
	}
	r := &a.res
	keySub := limiter.Subject{Scope: limiter.ScopeKey, ID: key.ID}
	if rl := key.RateLimit; rl != nil {
		r.AddLimits(keySub, limiter.Limits{RPS: rl.RPS, RPM: rl.RPM, RPH: rl.RPH, RPD: rl.RPD})
	}
	for _, pol := range policies {
		if pol.MaxRequests <= 0 {
			continue
		}
		subj, ok := pol.Subject("", key)
		if !ok {
			continue
		}
		if k, ok := limiter.WindowKind(pol.Window(), false); ok {
			r.Add(limiter.Subject{Scope: pol.ID, ID: subj}, k, pol.MaxRequests)
		}
	}
	a.dec = l.Reserve(r, 0)
	a.held = a.dec.Allowed
	if !a.dec.Allowed {
		a.refuse(ctx, &a.dec, write)
		return false
	}
	if rl := key.RateLimit; rl != nil && rl.Concurrency > 0 {
		if d := l.Acquire(&a.slot, keySub, rl.Concurrency); !d.Allowed {
			a.Release(l)
			a.refuse(ctx, &d, write)
			return false
		}
	}
	return true
}

// SetHeaders sets the x-ratelimit-* headers of an admitted call on h (the
// answer's headers, after the upstream's were copied: gw's own windows
// win, as on model traffic). Nothing when no request window applied.
func (a *Limits) SetHeaders(h *fasthttp.ResponseHeader) {
	if a.dec.Requests.Limit > 0 {
		a.hdr = a.dec.AppendHeaders(a.hdr[:0], h.SetBytesKV)
	}
}

func (a *Limits) refuse(ctx *fasthttp.RequestCtx, d *limiter.Decision, write func(*fasthttp.RequestCtx, int, string)) {
	msg := d.Message()
	if write != nil {
		write(ctx, fasthttp.StatusTooManyRequests, msg)
	} else {
		WriteError(ctx, fasthttp.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", msg)
	}
	a.hdr = d.AppendHeaders(a.hdr[:0], ctx.Response.Header.SetBytesKV)
}

// Release settles the reservation and frees the concurrency slot, and
// readies a for the next call. Idempotent.
func (a *Limits) Release(l *limiter.Limiter) {
	if l != nil && a.held {
		l.Settle(&a.res, 0)
	}
	a.slot.Release()
	a.res.Reset()
	a.held = false
	a.dec = limiter.Decision{}
}
