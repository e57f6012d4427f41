package edge

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
	"gw/admin/resources"
	"gw/edge/a2a"
	"gw/edge/authn"
	"gw/edge/passthrough"
	"gw/sse/msgconv"
	"gw/sse/rawjson"
	"gw/sse/respconv"
)

// The request pipeline of the model endpoints (chat completions, Messages,
// count_tokens, Responses; later endpoints join it). A request flows down
// the stages once, in this order (docs/ARCHITECTURE.md):
//
//	authenticate  edge/authn: caller key or verified JWT → the compiled caller
//	read          the surface's body, and its chat form for policy (surface.read)
//	plan          alias → dispatch plan, grants, allowed_cidrs, servable
//	limits        rate limits, token reservations, concurrency (limits.go)
//	input policy  guardrails on the request's texts: block, mask, monitor
//	              (guard_input.go, edge/guard)
//	cache         response cache lookup: a hit answers, a miss's answer is
//	              stored after dispatch (cache_stage.go, edge/cache)
//	dispatch      balancer, attempts, commit point, adapters (dispatch.go,
//	              buffered.go, stream.go, native.go)
//	output policy guardrails on the answer: a buffered answer is judged
//	              before it is written; a stream's text deltas pass a
//	              sliding window before their bytes leave (guard_output.go)
//	finish        usage record, access log, metrics, release (finish.go)
//
// A stage either passes the request on (true) or answers it and stops
// (false). Stages never finish the request themselves: serveModel does,
// in one place, unless dispatch committed a stream, which is finished when
// the HTTP library closes its body (relayState.CloseWithError).

// serveModel runs one model request of surface surf down the pipeline.
func (p *Proxy) serveModel(ctx *fasthttp.RequestCtx, surf *surface) {
	c := acquireCall()
	c.surf, c.start, c.snap = surf, time.Now(), p.Holder.Load()
	p.run(ctx, c)
	if c.committed {
		return // c belongs to the stream now
	}
	p.finish(ctx, c, ctx.Response.StatusCode())
}

func (p *Proxy) run(ctx *fasthttp.RequestCtx, c *call) {
	if !p.authenticate(ctx, c) || !c.surf.read(ctx, c) || !p.plan(ctx, c) {
		return
	}
	if !c.surf.unlimited && !p.admit(ctx, c) {
		return
	}
	if !p.inputPolicy(ctx, c) || !p.cacheLookup(ctx, c) {
		return
	}
	if c.plan.Kind == resources.KindSemantic && !p.semanticRoute(ctx, c) { // semroute.go
		return
	}
	// dispatch runs the output policy stage where the answer is written:
	// guardAnswer on a buffered answer, the relay's guarded next on a
	// stream (guard_output.go).
	p.dispatch(ctx, c)
	p.cacheSave(ctx, c)
}

// authenticate is the first stage: the caller, or 401 in the surface's envelope.
// It also notes which credential headers the caller sent, for the
// adapters (one lookup of each header serves both).
func (p *Proxy) authenticate(ctx *fasthttp.RequestCtx, c *call) bool {
	key, hasAuth, hasXKey := authn.Presented(&ctx.Request.Header)
	caller, fail := authn.Default.AuthenticateCredential(key, c.snap, c.start)
	if fail != nil {
		c.surf.writeError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", fail.Code, fail.Message)
		return false
	}
	c.caller = caller
	c.in.CallerCredential = 0
	if hasAuth {
		c.in.CallerCredential |= headers.SlotAuthorization
	}
	if hasXKey {
		c.in.CallerCredential |= headers.SlotXAPIKey
	}
	return true
}

// readChat reads a chat-completions body: the fields policy needs, and the
// roles (400 before any upstream call).
func readChat(ctx *fasthttp.RequestCtx, c *call) bool {
	return c.readChatBody(ctx, ctx.PostBody())
}

func (c *call) readChatBody(ctx *fasthttp.RequestCtx, body []byte) bool {
	badRole, rerr := scanChatRequest(body, &c.cr)
	if rerr != nil {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", rerr.code, rerr.msg)
		return false
	}
	if badRole >= 0 {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_value",
			"Invalid value for 'messages["+strconv.Itoa(badRole)+"].role': supported roles are 'system', 'developer', 'user', 'assistant' and 'tool' (lowercase).")
		return false
	}
	c.body = body
	return true
}

// readResponses reads a /v1/responses body. On an upstream that serves
// Responses natively (the `apis` rules) the body goes upstream as is;
// otherwise its chat form is dispatched (stateless: previous_response_id
// and store: true are refused with 400) and the answer converted back.
func readResponses(ctx *fasthttp.RequestCtx, c *call) bool {
	return readResponsesBody(ctx, c, ctx.PostBody())
}

func readResponsesBody(ctx *fasthttp.RequestCtx, c *call, orig []byte) bool {
	conv, err := respconv.ResponsesRequestToChat(c.convBuf[:0], orig, respconv.RequestOptions{})
	return c.readConverted(ctx, orig, conv, err, "max_output_tokens")
}

// readMessages reads a /v1/messages body: native on upstreams that serve
// Messages (Anthropic keys, `apis.messages`), otherwise converted to chat
// completions and the answer converted back. Errors use Anthropic's envelope.
func readMessages(ctx *fasthttp.RequestCtx, c *call) bool {
	return readMessagesBody(ctx, c, ctx.PostBody())
}

func readMessagesBody(ctx *fasthttp.RequestCtx, c *call, orig []byte) bool {
	conv, err := msgconv.MessagesRequestToChat(c.convBuf[:0], orig, msgconv.RequestOptions{})
	return c.readConverted(ctx, orig, conv, err, "max_tokens")
}

// readConverted takes a caller body of a non-chat surface whose chat
// conversion is conv (err when it failed). A body that does not convert
// may still be fine for an upstream that serves the surface natively (a
// previous_response_id, a server tool, a block type chat has no form for):
// policy then decides on a minimal chat body (model, stream, the output
// budget from maxKey) and the conversion error is answered, 400, only if a
// converted target is chosen.
func (c *call) readConverted(ctx *fasthttp.RequestCtx, orig, conv []byte, err error, maxKey string) bool {
	if fe, ok := err.(*rawjson.FoldedNameError); ok {
		// Refused whatever the target: a native upstream would parse the
		// body as it is, ambiguity included.
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", fe.Error())
		return false
	}
	if err != nil {
		pb, ok := policyBody(c.convBuf[:0], orig, maxKey)
		if !ok {
			c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
			return false
		}
		conv, c.convErr = pb, err.Error()
	}
	c.convBuf, c.origBody = conv, orig
	return c.readChatBody(ctx, conv)
}

// policyBody writes the minimal chat body policy needs for a caller body of
// another surface: {"model","stream","messages":[],"max_completion_tokens"}.
// It reports false when orig is not a JSON object with a string model.
func policyBody(dst, orig []byte, maxKey string) ([]byte, bool) {
	if !rawjson.Valid(orig) || rawjson.KindOf(orig) != rawjson.Object {
		return dst, false
	}
	m, kind, ok := rawjson.Get(orig, "model")
	if !ok || kind != rawjson.String {
		return dst, false
	}
	dst = append(append(dst, `{"model":`...), m...)
	if st, kind, ok := rawjson.Get(orig, "stream"); ok && kind == rawjson.True {
		dst = append(dst, `,"stream":`...)
		dst = append(dst, st...)
	}
	if n, kind, ok := rawjson.Get(orig, maxKey); ok && kind == rawjson.Number {
		dst = append(append(dst, `,"max_completion_tokens":`...), n...)
	}
	return append(dst, `,"messages":[]}`...), true
}

// readCount reads a /v1/messages/count_tokens body: only the model. The
// chosen target's upstream counts when it serves Messages natively
// (Anthropic keys, keys with `apis.messages`), through the same attempts,
// failover and cooldown as any buffered call; otherwise gw answers with
// its estimate (countLocally). The surface is unlimited: counting
// generates no tokens.
func readCount(ctx *fasthttp.RequestCtx, c *call) bool {
	body := ctx.PostBody()
	m, kind, ok := rawjson.Get(body, "model")
	valid, folded := rawjson.ValidNames(body)
	if folded != nil {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", rawjson.Folded(folded).Error())
		return false
	}
	if !valid || !ok || kind != rawjson.String {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", "model: a string is required")
		return false
	}
	c.cr.Model, _ = rawjson.AppendUnquote(c.cr.modelBuf[:0], m)
	c.body, c.origBody = body, body
	return true
}

// plan finds the alias's dispatch plan for the caller (404 alike for an
// unknown alias and one the key may not use), checks the client address
// against its allowed_cidrs (403) and that this build can serve it (501).
func (p *Proxy) plan(ctx *fasthttp.RequestCtx, c *call) bool {
	c.plan = c.snap.Plans[string(c.cr.Model)]
	if c.plan == nil || !c.caller.Allowed(c.plan) {
		modelNotFound(ctx, c.surf.writeError, string(c.cr.Model))
		return false
	}
	c.ip, c.ipOK = p.RealIP.ClientIP(ctx)
	if !cidrAllowed(c.plan.AllowedCIDRs, c.ip, c.ipOK) {
		c.surf.writeError(ctx, fasthttp.StatusForbidden, "permission_error", "ip_not_allowed",
			"Requests from this client address are not allowed for model `"+c.plan.Alias+"`.")
		return false
	}
	switch c.plan.Kind {
	case resources.KindEnsemble:
		return p.ensembleServable(ctx, c) // ensemble.go
	}
	if c.surf.endpoint != adapters.EndpointNone {
		return p.servesEndpoint(ctx, c) // endpoints.go
	}
	return true
}

// dispatch fills the adapter input and runs the attempts, buffered or
// streamed.
func (p *Proxy) dispatch(ctx *fasthttp.RequestCtx, c *call) {
	c.in.Body = c.body
	c.in.Stream = c.cr.Stream
	c.in.ForceUsage = c.cr.Stream && !c.cr.IncludeUsage
	c.in.ClientHeaders = &ctx.Request.Header // CallerCredential: authenticate
	fillVars(&c.in.Vars, c.caller.Key, c.plan.Alias)
	if (c.cr.Stream || c.surf.binary) && c.surf.endpoint != adapters.EndpointNone && c.outputOn() && !p.unguardedStream(ctx, c) {
		return
	}
	if c.surf.dispatch != nil {
		c.surf.dispatch(p, ctx, c) // speech, videos
		return
	}
	if c.plan.Ensemble != nil {
		p.ensemble(ctx, c) // ensemble.go: members, then the judge through this stage
		return
	}
	if c.cr.Stream {
		p.stream(ctx, c)
		return
	}
	p.buffered(ctx, c)
}

func fillVars(v *headers.Vars, k *resources.APIKey, alias string) {
	v[resources.VarAPIKeyID] = k.ID
	v[resources.VarAPIKeyName] = k.DisplayName
	v[resources.VarAPIKeyTeamID] = k.TeamID
	v[resources.VarAPIKeyUserID] = k.UserID
	v[resources.VarAPIKeyUserName] = k.UserName
	v[resources.VarModel] = alias
}

// serveAgents serves /a2a (edge/a2a) and the passthrough routes
// (edge/passthrough), which run their own stages outside the model
// pipeline; false when path is neither.
func (p *Proxy) serveAgents(ctx *fasthttp.RequestCtx, path []byte) bool {
	if len(path) >= len(a2a.Prefix) && string(path[:len(a2a.Prefix)]) == a2a.Prefix &&
		(len(path) == len(a2a.Prefix) || path[len(a2a.Prefix)] == '/') {
		if p.A2A == nil {
			WriteError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented", "gw does not serve /a2a in this build")
			return true
		}
		p.A2A.Serve(ctx, p.Holder.Load())
		return true
	}
	if p.Passthrough == nil {
		return false
	}
	snap := p.Holder.Load()
	if r := passthrough.Match(snap, path); r != nil {
		p.Passthrough.Serve(ctx, snap, r)
		return true
	}
	return false
}

// streamsBody reports a request whose body the listener must not read
// whole: a passthrough route relays it as it arrives.
func (p *Proxy) streamsBody(path []byte) bool {
	return p != nil && p.Passthrough != nil && passthrough.Match(p.Holder.Load(), path) != nil
}
