package edge

import (
	"context"

	"github.com/valyala/fasthttp"

	"gw/edge/guard"
	"gw/sse/transcode"
)

// guardState is a request's guardrail state (edge/guard): the merged chain
// of the scopes it matches, the texts judged and the outcome. Part of the
// pooled call; on is false for the common request no guardrail applies to.
type guardState struct {
	on  bool
	e   guard.Exec
	x   guard.Extractor
	cs  guard.ChatStream
	ns  guard.NativeStream
	buf []byte // the rewritten request body
	ans []byte // the rewritten answer body
}

func (g *guardState) reset() {
	if g.on {
		g.e.Reset()
		g.on = false
	}
}

// Generic caller-facing texts; guardrail names are safe to show, matched
// values never are.
const (
	msgBlockedInput  = "The request was blocked by guardrail policy"
	msgBlockedOutput = "The response was blocked by guardrail policy"
	msgUnavailable   = "A guardrail could not evaluate the content and fails closed"
	codeFilter       = transcode.CodeContentFilter
	codeUnavailable  = transcode.CodeGuardrailUnavailable
)

// inputPolicy is the input policy stage: the guardrails attached to the
// alias, the caller key and its team judge every text of the request
// before any upstream call. A block answers 422 content_filter, a
// fail-closed guardrail that cannot evaluate 422 guardrail_unavailable; a
// mask rewrites the body that goes upstream. A request no guardrail
// applies to costs three nil checks.
func (p *Proxy) inputPolicy(ctx *fasthttp.RequestCtx, c *call) bool {
	mg, kg, tg := c.plan.Guard, c.caller.Guard, c.caller.TeamGuard
	if mg == nil && kg == nil && tg == nil {
		return true // Fast path - nothing attached.
	}
	g := &c.g
	if !guard.Merge(&g.e.Chain, guard.Of(mg), guard.Of(kg), guard.Of(tg)) {
		return true
	}
	g.on = true
	stages := g.e.Chain.Input
	if len(stages) == 0 {
		return true
	}
	body := c.origBody
	if c.surf == surfChat {
		body = c.body
	}
	if err := g.x.Extract(&g.e, c.surf.guardIn, body); err != nil {
		// A body the engine cannot read cannot be judged (the read stage
		// validated requests; an upstream answer may still be garbage): the
		// chain's fail-open rules decide, never silence.
		if g.e.Unreadable(guard.Input, stages) >= guard.Blocked {
			c.errClass = "guardrail_unavailable"
			c.surf.writeError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", codeUnavailable, msgUnavailable)
			return false
		}
		return true
	}
	d := g.e.Judge(context.Background(), guard.Input, c.plan.Alias, stages)
	p.logGuardErr(c)
	switch d {
	case guard.Blocked:
		c.errClass = "guardrail_blocked"
		c.surf.writeError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", codeFilter, blockMessage(&g.e, msgBlockedInput))
		return false
	case guard.Unavailable:
		c.errClass = "guardrail_unavailable"
		c.surf.writeError(ctx, fasthttp.StatusUnprocessableEntity, "invalid_request_error", codeUnavailable, msgUnavailable)
		return false
	case guard.Masked:
		g.buf = g.x.Rewrite(g.buf[:0], &g.e)
		return c.reread(ctx, g.buf)
	}
	return true
}

// reread reads a masked body again, as the read stage did the caller's,
// so that the body sent upstream — the caller's own format on a native
// target, or its chat conversion — carries the masks.
func (c *call) reread(ctx *fasthttp.RequestCtx, body []byte) bool {
	switch c.surf {
	case surfChat:
		return c.readChatBody(ctx, body)
	case surfMessages:
		return readMessagesBody(ctx, c, body)
	case surfResponses:
		return readResponsesBody(ctx, c, body)
	default: // count_tokens: the body goes upstream as it is
		c.body, c.origBody = body, body
		return true
	}
}

// blockMessage is the caller-facing text of a block: a custom script's
// reason when it gave one.
func blockMessage(e *guard.Exec, def string) string {
	if e.Message != "" {
		return e.Message
	}
	return def
}

// logGuardErr logs a check that could not complete (the error text of a
// kind never carries a matched value or a secret).
func (p *Proxy) logGuardErr(c *call) {
	if err := c.g.e.Err; err != nil && p.Logger != nil {
		p.Logger.Warn("guardrail check failed", "guardrail", c.g.e.ErrGuardrail, "model", c.plan.Alias, "error", err.Error())
		c.g.e.Err = nil
	}
}
