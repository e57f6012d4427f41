package edge

import (
	"errors"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"gw/adapters"
	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/balancer"
	"gw/edge/redact"
)

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
	st, class, msg := f.status, "upstream_status", ""
	if g, ok := gwFailures[f.kind]; ok {
		st, class, msg = g.status, g.class, f.reason
		if f.kind == upstream.KindTimeout {
			msg = "upstream timeout"
		}
	}
	c.failures[c.nFailures] = failedAttempt{at: time.Now(), target: c.target, status: st, class: class, msg: msg}
	c.nFailures++
}

// countLocally answers count_tokens with gw's estimate, the one token
// limits reserve with: body bytes / 4 (at least 1).
func (p *Proxy) countLocally(ctx *fasthttp.RequestCtx, c *call) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	b := append(make([]byte, 0, 40), `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(max(1, len(c.body)/4)), 10)
	ctx.SetBody(append(b, '}'))
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

// gwFailure is how gw answers and records a failure it names itself (not
// an upstream status): the status, the caller's error type and code, and
// the usage record's error_class. One table serves both.
type gwFailure struct {
	status           int
	typ, code, class string
}

var gwFailures = map[upstream.ErrorKind]gwFailure{
	upstream.KindTimeout:   {fasthttp.StatusGatewayTimeout, "server_error", "upstream_timeout", "timeout"},
	upstream.KindTransport: {fasthttp.StatusBadGateway, "server_error", "upstream_unreachable", "transport"},
	upstream.KindBusy:      {fasthttp.StatusBadGateway, "server_error", "upstream_unreachable", "transport"},
	kindNoContent:          {fasthttp.StatusBadGateway, "server_error", "empty_stream", "empty_stream"},
	kindInvalid:            {fasthttp.StatusBadGateway, "server_error", "upstream_invalid_response", "upstream_invalid_response"},
	kindTooLarge:           {fasthttp.StatusBadGateway, "server_error", "upstream_response_too_large", "upstream_response_too_large"},
	kindCredential:         {fasthttp.StatusBadGateway, "server_error", "upstream_credential_unavailable", "credential"},
	kindUnsupported:        {fasthttp.StatusNotImplemented, "invalid_request_error", "not_implemented", "unsupported"},
}

// writeFailure answers with the last failure: gw's own envelope for the
// failures it names (gwFailures), else the upstream's status and body.
func writeFailure(ctx *fasthttp.RequestCtx, surf *surface, f *lastFailure) {
	g, ok := gwFailures[f.kind]
	if !ok {
		relayError(ctx, surf, f.status, f.body, f.ctype, f.backoff)
		return
	}
	msg := f.reason
	switch f.kind {
	case upstream.KindTimeout:
		msg = "the upstream did not answer in time"
	case upstream.KindTransport, upstream.KindBusy:
		msg = "cannot reach the upstream: " + f.reason
	}
	surf.writeError(ctx, g.status, g.typ, g.code, msg)
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
	kindCredential                                     // the provider credential could not be obtained (adapters.ErrCredential)
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

func (p *Proxy) newAttemptIter(c *call, ctx *fasthttp.RequestCtx) attemptIter {
	plan := c.dispatchPlan()
	a := attemptIter{c: c, plan: plan, ip: c.ip, ipOK: c.ipOK, last: -1, health: p.Health}
	g := plan.Group
	if g == nil {
		return a
	}
	a.mode = iterGroup
	r := &c.breq
	r.Tags = ctx.Request.Header.Peek(balancer.TagsHeader)
	if plan.Model.Routing.Strategy == resources.StrategyConsistentHash {
		r.Key = balancer.HashKey(plan.HashOn, keySource{ctx: ctx, c: c, ip: c.ip, ipOK: c.ipOK})
	}
	for i := range plan.Targets {
		t := &plan.Targets[i]
		if !eligible(t, c.ip, c.ipOK) {
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
		Transport: f.kind == upstream.KindTransport || f.kind == kindNoContent || f.kind == kindInvalid || f.kind == kindTooLarge || f.kind == kindCredential}
	if f.kind != upstream.KindStatus {
		bf.Status = 0
	}
	st.Trip(time.Now(), bf, t.Plan.Cooldown)
}

// buildRequest builds the upstream request of one attempt and returns it
// with the client to send it with. On failure, or when gw answers the call
// itself (count_tokens on an upstream without a counting endpoint), it
// answers the caller and returns nil.
func (p *Proxy) buildRequest(ctx *fasthttp.RequestCtx, c *call, t *snapshot.Target, up *snapshot.Upstream) (*fasthttp.Request, *upstream.Client) {
	if c.pastDeadline() { // ensemble.timeout_ms spent: no further attempt
		c.surf.writeError(ctx, fasthttp.StatusGatewayTimeout, "server_error", "upstream_timeout", "the upstream did not answer in time")
		c.errClass = "timeout"
		return nil, nil
	}
	c.target = t.Plan
	c.attempts++
	c.in.UpstreamModel = t.Plan.UpstreamModel
	c.in.Provider = t.Plan.Model.Provider
	c.in.PromptCacheTTL = ""
	if apc := t.Plan.Model.AutoPromptCaching; apc != nil && apc.Enabled {
		c.in.PromptCacheTTL = apc.TTL
	}
	if c.surf.endpoint != adapters.EndpointNone {
		return p.buildEndpoint(ctx, c, up) // endpoints.go
	}
	c.native = c.surf.native != adapters.SurfaceChat && up.Native[c.surf.native] != nil && !c.chatOnly
	if c.native {
		if nm, ok := up.Adapter.(adapters.NativeModeler); ok && !nm.NativeModel(c.surf.native, t.Plan.UpstreamModel) {
			c.native = false // this model of the key is converted (Bedrock: native Messages on Claude only)
		}
	}
	if !c.native && c.surf == surfCount {
		p.countLocally(ctx, c)
		return nil, nil
	}
	if !c.native && c.convErr != "" {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", c.convErr)
		return nil, nil
	}
	c.in.Body = c.body
	c.in.Shape = adapters.BodyShape{}
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
		c.in.Shape = c.cr.shape(c.in.Body)
		err = up.Adapter.BuildChat(req, &c.in)
	}
	if err == nil {
		return req, client
	}
	fasthttp.ReleaseRequest(req)
	if errors.Is(err, adapters.ErrBody) {
		c.surf.writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body must be a JSON object")
		return nil, nil
	}
	if errors.Is(err, adapters.ErrCredential) {
		c.credFail = true // the caller's loop fails the attempt (credentialFailed)
		return nil, nil
	}
	c.surf.writeError(ctx, fasthttp.StatusInternalServerError, "server_error", "internal_error", "cannot build the upstream request")
	return nil, nil
}

// credentialFailed reports whether the attempt buildRequest just refused
// failed for want of the provider credential; it then records the failure
// in fail (cooldown, failed-attempt record) so the caller's loop moves on
// to the next target instead of answering.
func (c *call) credentialFailed(t *snapshot.Target, fail *lastFailure) bool {
	if !c.credFail {
		return false
	}
	c.credFail = false
	*fail = lastFailure{kind: kindCredential, reason: "cannot obtain the credential of provider key " + t.Plan.Model.ProviderKeyName}
	c.noteFailure(fail)
	c.observe(t, fail, 0)
	return true
}

// answerFailed answers after every attempt failed (or none was eligible).
func (p *Proxy) answerFailed(ctx *fasthttp.RequestCtx, c *call, it *attemptIter, fail *lastFailure) {
	if it.tried == 0 && fail.kind == kindAllUnavailable {
		c.surf.writeError(ctx, fasthttp.StatusServiceUnavailable, "server_error", "all_targets_unavailable",
			"every target of model `"+c.plan.Alias+"` is cooling down or unhealthy")
		c.errClass = "all_targets_unavailable"
		return
	}
	if it.tried == 0 {
		c.surf.writeError(ctx, fasthttp.StatusForbidden, "permission_error", "ip_not_allowed", "no target of this model accepts requests from this client address")
		return
	}
	c.errClass = "upstream_failed"
	writeFailure(ctx, c.surf, fail)
}
