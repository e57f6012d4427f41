package edge

import (
	"errors"
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/openai"
	"gw/adapters/upstream"
)

// buffered dispatches a non-streaming chat call through the plan's attempts:
// retries on the same target, then failover to the next, until one answers
// or every allowed attempt failed.
func (p *Proxy) buffered(ctx *fasthttp.RequestCtx, c *call, ip netip.Addr, ipOK bool) {
	var fail lastFailure
	tried := 0
	for i := range c.plan.Attempts {
		t := &c.plan.Attempts[i]
		if !eligible(t, ip, ipOK) {
			continue
		}
		if tried > c.plan.MaxFallbacks {
			break
		}
		tried++
		up := t.Plan.Upstream
		if up == nil || up.Err != nil {
			fail = lastFailure{kind: kindUnsupported, reason: "the adapter of provider key " + t.Plan.Model.ProviderKeyName + " is not available in this build"}
			continue
		}
		for try := 0; try <= t.Retries; try++ {
			c.target = t.Plan
			c.attempts++
			req := fasthttp.AcquireRequest()
			resp := fasthttp.AcquireResponse()
			c.in.UpstreamModel = t.Plan.UpstreamModel
			c.in.Provider = t.Plan.Model.Provider
			if err := up.Adapter.BuildChat(req, &c.in); err != nil {
				fasthttp.ReleaseRequest(req)
				fasthttp.ReleaseResponse(resp)
				if errors.Is(err, adapters.ErrBody) {
					WriteError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body must be a JSON object")
					p.finish(ctx, c, fasthttp.StatusBadRequest)
					return
				}
				WriteError(ctx, fasthttp.StatusInternalServerError, "server_error", "internal_error", "cannot build the upstream request")
				p.finish(ctx, c, fasthttp.StatusInternalServerError)
				return
			}
			sent := time.Now()
			err := up.Client.Do(req, resp, t.Timeout)
			c.upstreamDur += time.Since(sent)
			fasthttp.ReleaseRequest(req)
			status := resp.StatusCode()
			kind := upstream.Classify(err, status)
			if err == nil && status < 300 {
				c.upTTFT = time.Since(sent)
				p.writeBuffered(ctx, c, resp)
				fasthttp.ReleaseResponse(resp)
				p.finish(ctx, c, status)
				return
			}
			if err == nil && !retryable(c.plan, status) {
				relayError(ctx, status, resp.Body(), resp.Header.ContentType())
				fasthttp.ReleaseResponse(resp)
				c.errClass = "upstream_status"
				p.finish(ctx, c, status)
				return
			}
			fail = lastFailure{kind: kind, status: status}
			if err != nil {
				fail.reason = describe(err)
			} else {
				fail.body = append(fail.body[:0], resp.Body()...)
				fail.ctype = append(fail.ctype[:0], resp.Header.ContentType()...)
			}
			fasthttp.ReleaseResponse(resp)
		}
	}
	if tried == 0 {
		WriteError(ctx, fasthttp.StatusForbidden, "permission_error", "ip_not_allowed", "no target of this model accepts requests from this client address")
		p.finish(ctx, c, fasthttp.StatusForbidden)
		return
	}
	c.errClass = "upstream_failed"
	p.finish(ctx, c, writeFailure(ctx, &fail))
}

// writeBuffered relays a successful upstream answer with the alias in `model`.
func (p *Proxy) writeBuffered(ctx *fasthttp.RequestCtx, c *call, resp *fasthttp.Response) {
	body := resp.Body()
	if u, ok := openai.ExtractUsage(body); ok {
		c.usage, c.haveUsage = u, true
	}
	ctx.SetStatusCode(resp.StatusCode())
	ctx.Response.Header.SetContentTypeBytes(resp.Header.ContentType())
	out := ctx.Response.BodyWriter()
	bb := bodyBufPool.Get().(*[]byte)
	*bb = openai.RewriteModel((*bb)[:0], body, c.plan.AliasJSON)
	_, _ = out.Write(*bb)
	c.respBytes = len(*bb)
	bodyBufPool.Put(bb)
	c.ttfb = time.Since(c.start)
}
