package edge

import (
	"errors"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/headers"
	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/balancer"
	"gw/edge/redact"
	"gw/limiter"
	"gw/sse/msgconv"
	"gw/sse/rawjson"
	"gw/sse/respconv"
)

// Proxy serves the caller-facing endpoints from the active snapshot.
type Proxy struct {
	Holder *snapshot.Holder
	RealIP RealIP
	Log    *AccessLog // nil disables the access log
	Logger *slog.Logger
	Usage  *UsageStream // nil disables usage events
	// Limiter enforces rate_limit and rate_limit_policies; nil disables limits.
	Limiter *limiter.Limiter
	// Health excludes models whose background checks fail; nil: no probes.
	Health *Health
	// MaxResponseBytes is the upstream client's cap on a buffered answer
	// (upstream.max_response_bytes), named in the error a larger one gets.
	MaxResponseBytes int64
}

var (
	pathChat      = "/v1/chat/completions"
	pathResponses = "/v1/responses"
	pathMessages  = "/v1/messages"
	pathCount     = "/v1/messages/count_tokens"
	pathModels    = "/v1/models"
)

// notBuilt lists caller paths of the spec that this build does not serve yet;
// they answer 501 rather than 404 so SDKs see a clear capability error.
var notBuilt = map[string]bool{
	"/v1/completions": true, "/v1/embeddings": true, "/v1/rerank": true, "/v1/images/generations": true,
	"/v1/images/edits": true, "/v1/audio/transcriptions": true, "/v1/audio/translations": true,
	"/v1/audio/speech": true, "/v1/videos": true, "/v1/messages": true, "/v1/messages/count_tokens": true,
	"/v1/responses": true, "/v1/realtime": true, "/a2a": true, "/mcp": true,
}

// Handle serves ctx when its path is a proxy endpoint and reports whether it did.
func (p *Proxy) Handle(ctx *fasthttp.RequestCtx) bool {
	path := ctx.Path()
	switch {
	case string(path) == pathChat:
		if !ctx.IsPost() {
			methodNotAllowed(ctx, "POST")
			return true
		}
		p.chat(ctx)
	case string(path) == pathMessages || string(path) == pathCount:
		if !ctx.IsPost() {
			methodNotAllowed(ctx, "POST")
			return true
		}
		p.messages(ctx, len(path) == len(pathCount))
	case string(path) == pathResponses:
		if !ctx.IsPost() {
			methodNotAllowed(ctx, "POST")
			return true
		}
		p.responses(ctx)
	case string(path) == pathModels || (len(path) > len(pathModels)+1 && string(path[:len(pathModels)+1]) == pathModels+"/"):
		if !ctx.IsGet() {
			methodNotAllowed(ctx, "GET")
			return true
		}
		snap := p.Holder.Load()
		c := authenticate(ctx, snap, time.Now(), WriteError)
		if c == nil {
			return true
		}
		if len(path) == len(pathModels) {
			serveModels(ctx, snap, c)
		} else {
			serveModel(ctx, snap, c, string(path[len(pathModels)+1:]))
		}
	case notBuilt[string(path)]:
		WriteError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
			"gw does not serve "+string(path)+" in this build")
	default:
		return false
	}
	return true
}

func methodNotAllowed(ctx *fasthttp.RequestCtx, allow string) {
	WriteError(ctx, fasthttp.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use "+allow)
	ctx.Response.Header.Set("Allow", allow)
}

// call is the per-request state of one proxied call. Pooled.
type call struct {
	start       time.Time
	upstreamDur time.Duration // time spent waiting on the upstream
	snap        *snapshot.Snapshot
	caller      *snapshot.Caller
	plan        *snapshot.Plan // the alias the caller asked for
	target      *snapshot.Plan // the direct model that answered last
	cr          chatRequest
	body        []byte // the caller's body as received
	effortBuf   []byte // body with the target's effort_mapping applied
	in          adapters.ChatInput
	status      int
	errClass    string
	usage       adapters.Usage
	haveUsage   bool
	respBytes   int
	attempts    int
	ttfb        time.Duration // downstream: start → first byte to the caller
	upTTFT      time.Duration // upstream: request sent → first content from the upstream
	stream      bool
	limited     bool                // a reservation was charged
	res         limiter.Reservation // request and token windows of this request
	keySlot     limiter.Slot        // caller key concurrency
	modelSlot   limiter.Slot        // model concurrency
	hdrBuf      []byte              // x-ratelimit-* header values
	breq        balancer.Request    // routing: tags, hash key, skipped targets
	anyway      []int               // routing: try_anyway order (scratch)
	ipBuf       []byte              // hash_on client_ip (scratch)
	idBuf       []byte              // hash_on api_key (scratch)
	surf        *surface            // the caller's wire format
	convBuf     []byte              // the caller's body converted to chat completions
	origBody    []byte              // the caller's body as received (converted surfaces)
	native      bool                // this attempt sends the caller's format upstream unchanged
	convErr     string              // why the caller's body has no chat form (native targets only)
	busy        *balancer.State     // streaming target counted in flight
	failures    [maxRecordedFailures]failedAttempt
	nFailures   int
}

// maxRecordedFailures bounds the per-attempt records kept for one request.
const maxRecordedFailures = 16

// failedAttempt is one failed upstream attempt, for its usage record.
type failedAttempt struct {
	at     time.Time
	target *snapshot.Plan
	status int
	class  string
	msg    string
}

// noteFailure records a failed attempt; its zero-token usage record is
// emitted when the request finishes (before the final record).
func (c *call) noteFailure(f *lastFailure) {
	if c.nFailures == len(c.failures) || c.target == nil {
		return
	}
	st := f.status
	class, msg := "upstream_status", ""
	switch f.kind {
	case upstream.KindTimeout:
		st, class, msg = fasthttp.StatusGatewayTimeout, "timeout", "upstream timeout"
	case upstream.KindTransport, upstream.KindBusy:
		st, class, msg = fasthttp.StatusBadGateway, "transport", f.reason
	case kindNoContent:
		st, class, msg = fasthttp.StatusBadGateway, "empty_stream", f.reason
	case kindInvalid:
		st, class, msg = fasthttp.StatusBadGateway, "upstream_invalid_response", f.reason
	case kindTooLarge:
		st, class, msg = fasthttp.StatusBadGateway, "upstream_response_too_large", f.reason
	case kindUnsupported:
		st, class, msg = fasthttp.StatusNotImplemented, "unsupported", f.reason
	}
	c.failures[c.nFailures] = failedAttempt{at: time.Now(), target: c.target, status: st, class: class, msg: msg}
	c.nFailures++
}

var callPool = sync.Pool{New: func() any { return new(call) }}

func acquireCall() *call { return callPool.Get().(*call) }

// releaseCall returns c to the pool; scratch buffers are kept.
func releaseCall(c *call) {
	c.dropBusy()
	c.res.Reset()
	c.keySlot.Release()
	c.modelSlot.Release()
	eb, hb, cb := c.effortBuf[:0], c.hdrBuf[:0], c.convBuf[:0]
	c.start, c.upstreamDur, c.snap, c.caller, c.plan, c.target = time.Time{}, 0, nil, nil, nil, nil
	c.cr = chatRequest{}
	c.body, c.in = nil, adapters.ChatInput{}
	c.status, c.errClass, c.usage, c.haveUsage, c.respBytes, c.attempts = 0, "", adapters.Usage{}, false, 0, 0
	c.ttfb, c.upTTFT, c.stream, c.limited, c.nFailures, c.native = 0, 0, false, false, 0, false
	c.effortBuf, c.hdrBuf, c.convBuf, c.origBody, c.surf, c.convErr = eb, hb, cb, nil, nil, ""
	c.breq.Reset()
	callPool.Put(c)
}

// chat serves POST /v1/chat/completions.
func (p *Proxy) chat(ctx *fasthttp.RequestCtx) {
	c := p.begin(ctx, surfChat)
	if c == nil {
		return
	}
	p.serve(ctx, c, ctx.PostBody())
}

// responses serves POST /v1/responses for any model. On an upstream that
// serves Responses natively (the `apis` rules) the body goes upstream as is
// and the events come back as they are; otherwise the request is converted
// to chat completions (stateless: previous_response_id and store: true are
// refused with 400), dispatched like a chat call, and the answer converted
// back — buffered or as the full Responses event sequence.
func (p *Proxy) responses(ctx *fasthttp.RequestCtx) {
	c := p.begin(ctx, surfResponses)
	if c == nil {
		return
	}
	orig := ctx.PostBody()
	conv, err := respconv.ResponsesRequestToChat(c.convBuf[:0], orig, respconv.RequestOptions{})
	p.serveConverted(ctx, c, orig, conv, err, "max_output_tokens")
}

// messages serves POST /v1/messages (and count_tokens) with the Anthropic
// Messages wire format for any model: native on upstreams that serve
// Messages (Anthropic keys, `apis.messages`), otherwise converted to chat
// completions, dispatched, and the answer converted back — buffered or as
// the full Messages event stream. Errors use Anthropic's envelope.
func (p *Proxy) messages(ctx *fasthttp.RequestCtx, count bool) {
	c := p.begin(ctx, surfMessages)
	if c == nil {
		return
	}
	orig := ctx.PostBody()
	if count {
		c.surf = surfCount
		p.countTokens(ctx, c, orig)
		return
	}
	conv, err := msgconv.MessagesRequestToChat(c.convBuf[:0], orig, msgconv.RequestOptions{})
	p.serveConverted(ctx, c, orig, conv, err, "max_tokens")
}

// serveConverted serves a caller body of a non-chat surface whose chat
// conversion is conv (err when it failed). A body that does not convert
// may still be fine for an upstream that serves the surface natively (a
// previous_response_id, a server tool, a block type chat has no form for):
// policy then decides on a minimal chat body (model, stream, the output
// budget from maxKey) and the conversion error is answered, 400, only if a
// converted target is chosen.
func (p *Proxy) serveConverted(ctx *fasthttp.RequestCtx, c *call, orig, conv []byte, err error, maxKey string) {
	if err != nil {
		pb, ok := policyBody(c.convBuf[:0], orig, maxKey)
		if !ok {
			c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", err.Error())
			p.finish(ctx, c, fasthttp.StatusBadRequest)
			return
		}
		conv, c.convErr = pb, err.Error()
	}
	c.convBuf, c.origBody = conv, orig
	p.serve(ctx, c, conv)
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

// countTokens answers /v1/messages/count_tokens. The chosen target's
// upstream counts when it serves Messages natively (Anthropic keys, keys
// with `apis.messages`), through the same attempts, failover and cooldown as
// any buffered call; otherwise gw answers with its estimate (countLocally).
// Rate limits are not applied: counting generates no tokens.
func (p *Proxy) countTokens(ctx *fasthttp.RequestCtx, c *call, body []byte) {
	m, kind, ok := rawjson.Get(body, "model")
	if !rawjson.Valid(body) || !ok || kind != rawjson.String {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", "model: a string is required")
		p.finish(ctx, c, fasthttp.StatusBadRequest)
		return
	}
	c.cr.Model, _ = rawjson.AppendUnquote(c.cr.modelBuf[:0], m)
	ip, ipOK, ok := p.resolvePlan(ctx, c)
	if !ok {
		return
	}
	c.body, c.origBody = body, body
	c.in.ClientHeaders = &ctx.Request.Header
	c.in.CallerCredential = credentialSlots(&ctx.Request.Header)
	fillVars(&c.in.Vars, c.caller.Key, c.plan.Alias)
	p.buffered(ctx, c, ip, ipOK)
}

// resolvePlan finds the plan of c.cr.Model for the caller and checks the
// client address against its allowed_cidrs. It returns false after
// answering 404 or 403.
func (p *Proxy) resolvePlan(ctx *fasthttp.RequestCtx, c *call) (netip.Addr, bool, bool) {
	c.plan = c.snap.Plans[string(c.cr.Model)]
	if c.plan == nil || !c.caller.Allowed(c.plan) {
		modelNotFound(ctx, c.surf.writeError, string(c.cr.Model))
		p.finish(ctx, c, fasthttp.StatusNotFound)
		return netip.Addr{}, false, false
	}
	ip, ipOK := p.RealIP.ClientIP(ctx)
	if !cidrAllowed(c.plan.AllowedCIDRs, ip, ipOK) {
		c.surf.writeError(ctx, fasthttp.StatusForbidden, "permission_error", "ip_not_allowed",
			"Requests from this client address are not allowed for model `"+c.plan.Alias+"`.")
		p.finish(ctx, c, fasthttp.StatusForbidden)
		return netip.Addr{}, false, false
	}
	return ip, ipOK, true
}

// countLocally answers count_tokens with gw's estimate, the one token
// limits reserve with: body bytes / 4 (at least 1).
func (p *Proxy) countLocally(ctx *fasthttp.RequestCtx, c *call) {
	ctx.SetContentType("application/json")
	b := append(make([]byte, 0, 40), `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(max(1, len(c.body)/4)), 10)
	ctx.SetBody(append(b, '}'))
	p.finish(ctx, c, fasthttp.StatusOK)
}

// begin starts a proxied call: state, snapshot, authentication. It returns
// nil after answering 401.
func (p *Proxy) begin(ctx *fasthttp.RequestCtx, surf *surface) *call {
	c := acquireCall()
	c.surf = surf
	c.start = time.Now()
	c.snap = p.Holder.Load()
	c.caller = authenticate(ctx, c.snap, c.start, surf.writeError)
	if c.caller == nil {
		p.finish(ctx, c, fasthttp.StatusUnauthorized)
		return nil
	}
	return c
}

// serve runs a chat-completions body through policy and dispatch.
func (p *Proxy) serve(ctx *fasthttp.RequestCtx, c *call, body []byte) {
	badRole, rerr := scanChatRequest(body, &c.cr)
	if rerr != nil {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", rerr.code, rerr.msg)
		p.finish(ctx, c, fasthttp.StatusBadRequest)
		return
	}
	if badRole >= 0 {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_value",
			"Invalid value for 'messages["+strconv.Itoa(badRole)+"].role': supported roles are 'system', 'developer', 'user', 'assistant' and 'tool' (lowercase).")
		p.finish(ctx, c, fasthttp.StatusBadRequest)
		return
	}
	ip, ipOK, ok := p.resolvePlan(ctx, c)
	if !ok {
		return
	}
	switch c.plan.Kind {
	case resources.KindEnsemble, resources.KindSemantic:
		c.surf.writeError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented",
			c.plan.Kind.String()+" models are not served by this build")
		p.finish(ctx, c, fasthttp.StatusNotImplemented)
		return
	}
	c.body = body
	if !p.admit(ctx, c) {
		return
	}
	c.in.Body = body
	c.in.Stream = c.cr.Stream
	c.in.ForceUsage = c.cr.Stream && !c.cr.IncludeUsage
	c.in.ClientHeaders = &ctx.Request.Header
	c.in.CallerCredential = credentialSlots(&ctx.Request.Header)
	fillVars(&c.in.Vars, c.caller.Key, c.plan.Alias)
	if c.cr.Stream {
		p.stream(ctx, c, ip, ipOK)
		return
	}
	p.buffered(ctx, c, ip, ipOK)
}

func credentialSlots(h *fasthttp.RequestHeader) headers.Slots {
	var s headers.Slots
	if len(h.PeekBytes(hdrAuthorization)) > 0 {
		s |= headers.SlotAuthorization
	}
	if len(h.PeekBytes(hdrXAPIKey)) > 0 {
		s |= headers.SlotXAPIKey
	}
	return s
}

func fillVars(v *headers.Vars, k *resources.APIKey, alias string) {
	v[resources.VarAPIKeyID] = k.ID
	v[resources.VarAPIKeyName] = k.DisplayName
	v[resources.VarAPIKeyTeamID] = k.TeamID
	v[resources.VarAPIKeyUserID] = k.UserID
	v[resources.VarAPIKeyUserName] = k.UserName
	v[resources.VarModel] = alias
}

// attemptOutcome says what to do after one upstream attempt.
type attemptOutcome uint8

const (
	outcomeDone  attemptOutcome = iota // answer written (success or final error)
	outcomeRetry                       // retryable failure; try again or fail over
)

// retryable reports whether an upstream status may be retried or failed over.
func retryable(plan *snapshot.Plan, status int) bool {
	if status >= 500 {
		return true
	}
	if status == fasthttp.StatusTooManyRequests && plan.RetryOn429 {
		return true
	}
	for _, s := range plan.FallbackOn {
		if s == status {
			return true
		}
	}
	return false
}

// eligible reports whether target t may serve this request (allowed_cidrs of
// the target model narrow a routing group's targets).
func eligible(t *snapshot.Target, ip netip.Addr, ok bool) bool {
	return cidrAllowed(t.Plan.AllowedCIDRs, ip, ok)
}

// lastFailure remembers the last retryable failure to report when every
// attempt failed.
type lastFailure struct {
	kind       upstream.ErrorKind
	status     int
	body       []byte
	ctype      []byte
	reason     string
	retryAfter string // the upstream's Retry-After, for cooldown
	backoff    []byte // back-off headers to relay with the status (appendBackoff)
}

// writeFailure answers with the last failure: the upstream's status and body,
// or 504 for a timeout and 502 for a transport failure.
func writeFailure(ctx *fasthttp.RequestCtx, surf *surface, f *lastFailure) int {
	switch f.kind {
	case upstream.KindTimeout:
		surf.writeError(ctx, fasthttp.StatusGatewayTimeout, "server_error", "upstream_timeout", "the upstream did not answer in time")
		return fasthttp.StatusGatewayTimeout
	case upstream.KindTransport, upstream.KindBusy:
		surf.writeError(ctx, fasthttp.StatusBadGateway, "server_error", "upstream_unreachable", "cannot reach the upstream: "+f.reason)
		return fasthttp.StatusBadGateway
	case kindUnsupported:
		surf.writeError(ctx, fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented", f.reason)
		return fasthttp.StatusNotImplemented
	case kindNoContent:
		surf.writeError(ctx, fasthttp.StatusBadGateway, "server_error", "empty_stream", f.reason)
		return fasthttp.StatusBadGateway
	case kindInvalid:
		surf.writeError(ctx, fasthttp.StatusBadGateway, "server_error", "upstream_invalid_response", f.reason)
		return fasthttp.StatusBadGateway
	case kindTooLarge:
		surf.writeError(ctx, fasthttp.StatusBadGateway, "server_error", "upstream_response_too_large", f.reason)
		return fasthttp.StatusBadGateway
	}
	relayError(ctx, surf, f.status, f.body, f.ctype, f.backoff)
	return f.status
}

// relayError writes an upstream error with its status and the upstream's
// back-off headers. An empty body becomes the envelope "upstream returned
// <status> <reason>".
func relayError(ctx *fasthttp.RequestCtx, surf *surface, status int, body, ctype, backoff []byte) {
	defer setBackoff(ctx, backoff) // after the body: writing it resets the response
	if surf.relayError != nil {
		surf.relayError(ctx, status, body)
		return
	}
	if len(body) == 0 {
		surf.writeError(ctx, status, errorTypeFor(status), "upstream_error",
			"upstream returned "+strconv.Itoa(status)+" "+fasthttp.StatusMessage(status))
		return
	}
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	if len(ctype) > 0 {
		ctx.Response.Header.SetContentTypeBytes(ctype)
	} else {
		ctx.SetContentType("application/json")
	}
	ctx.SetBody(body)
}

func errorTypeFor(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 429:
		return "rate_limit_error"
	case status < 500:
		return "invalid_request_error"
	}
	return "server_error"
}

// Failure kinds beyond upstream.ErrorKind.
const (
	kindUnsupported    upstream.ErrorKind = 100 + iota // adapter family not in this build
	kindNoContent                                      // a stream ended before any content
	kindAllUnavailable                                 // health and cooldown exclude every target
	kindInvalid                                        // a 2xx answer gw cannot read (not JSON)
	kindTooLarge                                       // a buffered answer above upstream.max_response_bytes
)

// transportFailure classifies a failed exchange for the caller (a fixed
// phrase) and logs the library's own error text, which names addresses
// and internals, for the operator.
func (p *Proxy) transportFailure(c *call, t *snapshot.Target, err error) lastFailure {
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		return lastFailure{kind: kindTooLarge, reason: "the upstream answer is larger than upstream.max_response_bytes (" +
			strconv.FormatInt(p.MaxResponseBytes, 10) + " bytes)"}
	}
	if p.Logger != nil {
		p.Logger.Warn("upstream attempt failed", "model", c.plan.Alias, "target", t.Plan.Alias,
			"provider_key", t.Plan.Model.ProviderKeyName, "error", redact.String(err.Error()))
	}
	return lastFailure{kind: upstream.Classify(err, 0), reason: upstream.Describe(err)}
}

// bodyBufPool holds response body scratch buffers.
var bodyBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// attemptIter walks a plan's attempts. A direct model is its own single
// target. A routing model asks its balancer group for each attempt: the
// strategy picks among the usable targets of the highest tier, failed ones
// are skipped on the next pick, and lower tiers are reached only when higher
// ones are exhausted — up to max_fallbacks further targets.
type attemptIter struct {
	c      *call
	plan   *snapshot.Plan
	ip     netip.Addr
	ipOK   bool
	i      int
	tried  int
	last   int
	anyway []int // when_all_unavailable: try_anyway, declared order
	mode   uint8
	cidrs  int // targets excluded by allowed_cidrs
	health *Health
}

const (
	iterDeclared uint8 = iota // direct models
	iterGroup                 // routing models: balancer picks
	iterAnyway                // routing, everything excluded: declared order
)

func (p *Proxy) newAttemptIter(c *call, ip netip.Addr, ipOK bool, ctx *fasthttp.RequestCtx) attemptIter {
	a := attemptIter{c: c, plan: c.plan, ip: ip, ipOK: ipOK, last: -1, health: p.Health}
	g := c.plan.Group
	if g == nil {
		return a
	}
	a.mode = iterGroup
	r := &c.breq
	r.Tags = ctx.Request.Header.Peek(balancer.TagsHeader)
	if c.plan.Model.Routing.Strategy == resources.StrategyConsistentHash {
		r.Key = balancer.HashKey(c.plan.HashOn, keySource{ctx: ctx, c: c, ip: ip, ipOK: ipOK})
	}
	for i := range c.plan.Targets {
		t := &c.plan.Targets[i]
		if !eligible(t, ip, ipOK) {
			r.Skip = r.Skip.Add(i)
			a.cidrs++
		} else if !a.health.Healthy(t.Plan.ID, c.start) {
			r.Skip = r.Skip.Add(i)
		}
	}
	r.Skip = g.MarkCooling(r.Skip, c.start)
	return a
}

// next returns the next target and its compiled upstream, or nil when done.
// A target whose adapter is not in this build is reported through fail and
// skipped.
func (a *attemptIter) next(fail *lastFailure) (*snapshot.Target, *snapshot.Upstream) {
	for {
		t := a.pick(fail)
		if t == nil {
			return nil, nil
		}
		a.tried++
		if up := t.Plan.Upstream; up != nil && up.Err == nil {
			return t, up
		}
		*fail = lastFailure{kind: kindUnsupported, reason: "the adapter of provider key " + t.Plan.Model.ProviderKeyName + " is not available in this build"}
	}
}

func (a *attemptIter) pick(fail *lastFailure) *snapshot.Target {
	switch a.mode {
	case iterDeclared:
		for a.i < len(a.plan.Attempts) {
			t := &a.plan.Attempts[a.i]
			a.i++
			if !eligible(t, a.ip, a.ipOK) {
				a.cidrs++
				continue
			}
			if a.tried > a.plan.MaxFallbacks {
				return nil
			}
			return t
		}
		return nil
	case iterGroup:
		r := &a.c.breq
		if a.last >= 0 {
			r.Skip = r.Skip.Add(a.last)
		}
		if a.tried > a.plan.MaxFallbacks {
			return nil
		}
		i := a.plan.Group.Pick(r)
		if i >= 0 {
			a.last = i
			return &a.plan.Targets[i]
		}
		if a.tried > 0 || a.plan.WhenAllUnavailable != "try_anyway" || a.cidrs == len(a.plan.Targets) {
			if a.tried == 0 && a.cidrs < len(a.plan.Targets) {
				*fail = lastFailure{kind: kindAllUnavailable}
			}
			return nil
		}
		a.mode = iterAnyway
		a.anyway = a.plan.Group.Eligible(r, a.c.anyway[:0])
		a.c.anyway = a.anyway
		a.i = 0
		fallthrough
	default: // iterAnyway: every eligible target in declared order
		for a.i < len(a.anyway) {
			t := &a.plan.Targets[a.anyway[a.i]]
			a.i++
			if eligible(t, a.ip, a.ipOK) {
				return t
			}
		}
		return nil
	}
}

// keySource gives the balancer the request values hash_on can name.
type keySource struct {
	ctx  *fasthttp.RequestCtx
	c    *call
	ip   netip.Addr
	ipOK bool
}

func (k keySource) Header(name string) []byte { return k.ctx.Request.Header.Peek(name) }
func (k keySource) Cookie(name string) []byte { return k.ctx.Request.Header.Cookie(name) }

// APIKey is the caller key's derived ID: stable, and never the plaintext.
func (k keySource) APIKey() []byte { return k.c.keyID() }
func (k keySource) ClientIP() []byte {
	if !k.ipOK {
		return nil
	}
	k.c.ipBuf = k.ip.AppendTo(k.c.ipBuf[:0])
	return k.c.ipBuf
}

// holdBusy counts the stream's target in flight until dropBusy.
func (c *call) holdBusy(st *balancer.State) {
	if st != nil {
		st.Acquire()
		c.busy = st
	}
}

// dropBusy ends the in-flight count of holdBusy; safe to call again.
func (c *call) dropBusy() {
	if c.busy != nil {
		c.busy.Release()
		c.busy = nil
	}
}

// keyID returns the caller key's derived ID as bytes without allocating.
func (c *call) keyID() []byte {
	c.idBuf = append(c.idBuf[:0], c.caller.Key.ID...)
	return c.idBuf
}

// observe feeds a finished attempt back to the target's shared state: the
// time to first byte of a success (least_latency), or a cooldown trip.
func (c *call) observe(t *snapshot.Target, f *lastFailure, ttfb time.Duration) {
	st := t.Plan.State
	if st == nil {
		return
	}
	if f == nil {
		st.Observe(ttfb)
		return
	}
	if t.Plan.Cooldown == nil {
		return
	}
	bf := balancer.Failure{Status: f.status, Timeout: f.kind == upstream.KindTimeout, RetryAfter: f.retryAfter,
		Transport: f.kind == upstream.KindTransport || f.kind == kindNoContent || f.kind == kindInvalid || f.kind == kindTooLarge}
	if f.kind != upstream.KindStatus {
		bf.Status = 0
	}
	st.Trip(time.Now(), bf, t.Plan.Cooldown)
}

// buildRequest builds the upstream request of one attempt and returns it
// with the client to send it with. On failure, or when gw answers the call
// itself (count_tokens on an upstream without a counting endpoint), it
// answers the caller, finishes c and returns nil.
func (p *Proxy) buildRequest(ctx *fasthttp.RequestCtx, c *call, t *snapshot.Target, up *snapshot.Upstream) (*fasthttp.Request, *upstream.Client) {
	c.target = t.Plan
	c.attempts++
	c.in.UpstreamModel = t.Plan.UpstreamModel
	c.in.Provider = t.Plan.Model.Provider
	c.in.PromptCacheTTL = ""
	if apc := t.Plan.Model.AutoPromptCaching; apc != nil && apc.Enabled {
		c.in.PromptCacheTTL = apc.TTL
	}
	c.native = c.surf.native != adapters.SurfaceChat && up.Native[c.surf.native] != nil
	if !c.native && c.surf == surfCount {
		p.countLocally(ctx, c)
		return nil, nil
	}
	if !c.native && c.convErr != "" {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", c.convErr)
		p.finish(ctx, c, fasthttp.StatusBadRequest)
		return nil, nil
	}
	c.in.Body = c.body
	if t.Plan.Effort != nil && !c.native { // effort_mapping of the chosen target
		out := t.Plan.Effort.Apply(c.effortBuf[:0], c.body)
		if len(out) > 0 && len(c.body) > 0 && &out[0] != &c.body[0] {
			c.effortBuf = out // keep our own buffer, never the caller's body
		}
		c.in.Body = out
	}
	req := fasthttp.AcquireRequest()
	var err error
	client := up.Client
	if c.native {
		// Same wire format on both sides: the caller's body goes upstream
		// as is (thinking signatures, cache_control, encrypted reasoning,
		// betas intact).
		native := c.in
		native.Body = c.origBody
		client = up.Native[c.surf.native]
		err = up.Adapter.(adapters.NativeBuilder).BuildNative(req, &native, c.surf.native)
	} else {
		err = up.Adapter.BuildChat(req, &c.in)
	}
	if err == nil {
		return req, client
	}
	fasthttp.ReleaseRequest(req)
	if errors.Is(err, adapters.ErrBody) {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body must be a JSON object")
		p.finish(ctx, c, fasthttp.StatusBadRequest)
		return nil, nil
	}
	c.surf.writeError(ctx, fasthttp.StatusInternalServerError, "server_error", "internal_error", "cannot build the upstream request")
	p.finish(ctx, c, fasthttp.StatusInternalServerError)
	return nil, nil
}

// finishFailed answers after every attempt failed (or none was eligible).
func (p *Proxy) finishFailed(ctx *fasthttp.RequestCtx, c *call, it *attemptIter, fail *lastFailure) {
	if it.tried == 0 && fail.kind == kindAllUnavailable {
		c.surf.writeError(ctx, fasthttp.StatusServiceUnavailable, "server_error", "all_targets_unavailable",
			"every target of model `"+c.plan.Alias+"` is cooling down or unhealthy")
		c.errClass = "all_targets_unavailable"
		p.finish(ctx, c, fasthttp.StatusServiceUnavailable)
		return
	}
	if it.tried == 0 {
		c.surf.writeError(ctx, fasthttp.StatusForbidden, "permission_error", "ip_not_allowed", "no target of this model accepts requests from this client address")
		p.finish(ctx, c, fasthttp.StatusForbidden)
		return
	}
	c.errClass = "upstream_failed"
	p.finish(ctx, c, writeFailure(ctx, c.surf, fail))
}
