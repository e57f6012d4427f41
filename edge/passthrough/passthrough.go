// Package passthrough relays the HTTP traffic of passthrough_routes to
// their upstreams under gw's authentication, grants, guardrails and usage
// records (spec "Remaining collections", "Authentication" 4 and 8). A
// request under a route's path goes to the route's upstream with the
// prefix stripped (strip_prefix), its methods checked (405) and its
// timeout applied (504). In inject mode the caller's credentials are
// removed and the provider key's credential inserted. Bodies stream both
// ways without being held, except when a guardrail must read them.
package passthrough

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"gw/adapters/upstream"
	"gw/admin/resources"
	"gw/admin/snapshot"
	"gw/edge/guard"
	"gw/edge/passthrough/gate"
	"gw/edge/usage"
	"gw/limiter"
	"gw/sse"
)

// Protocol is the usage records' inbound_protocol.
const Protocol = "passthrough"

var (
	requests = gate.NewCounters("gw_passthrough_requests_total", "route")
	latency  = metrics.NewPrometheusHistogram(`gw_passthrough_request_duration_seconds`)
)

// Handler serves the passthrough routes of the active snapshot.
type Handler struct {
	// Usage receives one record per request; nil: none.
	Usage *usage.Pipeline
	// Logger receives guardrail check errors; nil: slog.Default.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body (streamed or read for a
	// guardrail), and an answer read whole for an output guardrail; 0:
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Limiter charges each request to the caller key's rate_limit and the
	// matching rate_limit_policies; nil: no limits.
	Limiter *limiter.Limiter

	tables atomic.Pointer[table]
}

// DefaultMaxBodyBytes is MaxBodyBytes when unset: file uploads pass.
const DefaultMaxBodyBytes = 512 << 20

// table is what one snapshot's routes need at request time.
type table struct {
	snap    *snapshot.Snapshot
	clients map[*resources.PassthroughRoute]*upstream.Client
	errs    map[*resources.PassthroughRoute]error
	creds   map[*resources.PassthroughRoute]credential // inject mode; absent: none or not buildable
}

// Match returns the route whose path covers path (the longest one), or nil.
func Match(snap *snapshot.Snapshot, path []byte) *resources.PassthroughRoute {
	var best *resources.PassthroughRoute
	for _, r := range snap.Resources.PassthroughRoutes {
		if covers(r.Path, path) && (best == nil || len(r.Path) > len(best.Path)) {
			best = r
		}
	}
	return best
}

func covers(prefix string, p []byte) bool {
	if prefix == "/" {
		return len(p) > 0 && p[0] == '/'
	}
	return len(p) >= len(prefix) && string(p[:len(prefix)]) == prefix && (len(p) == len(prefix) || p[len(prefix)] == '/')
}

// client returns the upstream client of r under snap, building the
// snapshot's table on its first request.
func (h *Handler) client(snap *snapshot.Snapshot, r *resources.PassthroughRoute) (*upstream.Client, error) {
	cl, _, err := h.route(snap, r)
	return cl, err
}

// route returns what r needs under snap: its client, and its credential in
// inject mode (built once per snapshot, not per request).
func (h *Handler) route(snap *snapshot.Snapshot, r *resources.PassthroughRoute) (*upstream.Client, credential, error) {
	t := h.tables.Load()
	if t == nil || t.snap != snap {
		// Slow path - the first request under this snapshot.
		t = &table{snap: snap, clients: map[*resources.PassthroughRoute]*upstream.Client{}, errs: map[*resources.PassthroughRoute]error{},
			creds: map[*resources.PassthroughRoute]credential{}}
		for _, rt := range snap.Resources.PassthroughRoutes {
			if rt.Inject() {
				if cr, ok := credentialOf(rt.ProviderKey, snap.Upstreams[rt.ProviderKey]); ok {
					t.creds[rt] = cr
				}
			}
			if snap.Options.Pool == nil {
				t.errs[rt] = errors.New("no upstream pool")
				continue
			}
			tg := upstream.Target{BaseURL: rt.Upstream, TLS: upstream.TLS{Verify: true}}
			if pk := rt.ProviderKey; pk != nil {
				tg.TLS = upstream.TLS{CACert: pk.TLS.CACert, CAPool: pk.TLS.CAPool, Verify: pk.TLS.Verify}
				tg.ResolveAddresses = pk.ResolveAddresses
			}
			c, err := snap.Options.Pool.Client(tg)
			t.clients[rt], t.errs[rt] = c, err
		}
		h.tables.Store(t)
	}
	return t.clients[r], t.creds[r], t.errs[r]
}

// call is one request's state. Pooled.
type call struct {
	h        *Handler
	start    time.Time
	snap     *snapshot.Snapshot
	route    *resources.PassthroughRoute
	caller   *snapshot.Caller
	status   int
	class    string
	msg      string
	ttfb     time.Duration
	upDur    time.Duration
	reqN     int64
	respN    int64
	stream   bool
	method   string // one of resources.PassthroughMethods (a constant, never the request's bytes)
	resp     *fasthttp.Response
	guard    bool
	e        guard.Exec
	body     []byte // a request body read whole for a guardrail
	text     []byte // its extracted text
	buf      []byte // relay copy buffer
	url      []byte // the upstream URL
	lk       []byte // a header name, lowercased
	lr       limitReader
	bodyRead bool // body holds the whole request body
	relay    bodyRelay
	bodySent bool // the request (body included) reached the upstream
	lim      gate.Limits
}

var callPool = sync.Pool{New: func() any { return &call{buf: make([]byte, 32<<10)} }}

func (c *call) reset() {
	if c.guard {
		c.e.Reset()
	}
	c.lim.Release(c.h.Limiter)
	c.h, c.snap, c.route, c.caller, c.resp = nil, nil, nil, nil, nil
	c.status, c.class, c.msg, c.ttfb, c.upDur, c.reqN, c.respN, c.stream, c.guard = 0, "", "", 0, 0, 0, 0, false, false
	if cap(c.body) > 1<<20 {
		c.body = nil
	}
	c.bodySent = false
	c.body, c.text, c.bodyRead, c.method, c.lr, c.relay = c.body[:0], c.text[:0], false, "", limitReader{}, bodyRelay{}
}

// Serve relays ctx to route r of snap.
func (h *Handler) Serve(ctx *fasthttp.RequestCtx, snap *snapshot.Snapshot, r *resources.PassthroughRoute) {
	c := callPool.Get().(*call)
	c.h, c.start, c.snap, c.route = h, time.Now(), snap, r
	if h.serve(ctx, c) {
		return // the body stream finishes c
	}
	if !c.bodyRead && !c.bodySent && ctx.RequestBodyStream() != nil && ctx.Request.Header.ContentLength() != 0 {
		// Rejected before its body went anywhere: the unread bytes must not
		// be taken for the next request on this connection.
		ctx.SetConnectionClose()
	}
	c.status = ctx.Response.StatusCode()
	h.finish(c)
}

// serve runs the request; true when a streamed answer owns c now.
func (h *Handler) serve(ctx *fasthttp.RequestCtx, c *call) bool {
	r := c.route
	if c.method = methodOf(ctx.Method()); c.method == "" || !r.AllowsMethod(c.method) {
		allow := strings.Join(r.Methods, ", ")
		gate.WriteError(ctx, fasthttp.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
			"passthrough route "+r.Name+" accepts "+allow)
		ctx.Response.Header.Set("Allow", allow)
		c.class = "method_not_allowed"
		return false
	}
	if c.caller = gate.Authenticate(ctx, c.snap, c.start, r.AnonymousKey); c.caller == nil {
		c.class = "unauthorized"
		return false
	}
	if !gate.Granted(c.caller.Key.AllowedRoutes, r.Name) {
		gate.WriteError(ctx, fasthttp.StatusForbidden, "permission_error", "route_not_allowed",
			"This key may not use passthrough route `"+r.Name+"`.")
		c.class = "route_not_allowed"
		return false
	}
	if !c.lim.Admit(ctx, h.Limiter, c.snap.Resources.RateLimitPolicies, c.caller.Key, nil) {
		c.class = "rate_limited"
		return false
	}
	cl, cred, err := h.route(c.snap, r)
	if r.Inject() && !cred.ok() {
		// The snapshot compiles every provider key's adapter; without an
		// upstream pool (tests) there is none.
		gate.WriteError(ctx, fasthttp.StatusBadGateway, "api_error", "upstream_error",
			"the route's provider key "+r.ProviderKey.DisplayName+" has no compiled credential")
		c.class = "upstream_error"
		return false
	}
	if err != nil {
		gate.WriteError(ctx, fasthttp.StatusBadGateway, "api_error", "upstream_error", "cannot reach the route's upstream: "+err.Error())
		c.class = "upstream_error"
		return false
	}
	if !h.inputPolicy(ctx, c) {
		return false
	}
	// A SigV4 signature covers the body's hash: the body is read whole
	// (up to MaxBodyBytes) before it goes (docs/AGENTS.md).
	if cred.signer != nil && !c.bodyRead && !h.readWhole(ctx, c) {
		return false
	}

	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	h.buildRequest(ctx, c, req, cred)
	if err := authorize(c, req, cred); err != nil {
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		gate.WriteError(ctx, fasthttp.StatusBadGateway, "api_error", "upstream_error", "cannot authenticate to the route's upstream: "+err.Error())
		c.class, c.msg = "upstream_error", err.Error()
		return false
	}
	timeout := time.Duration(r.TimeoutMS) * time.Millisecond
	if timeout == 0 {
		timeout = c.snap.Options.UpstreamTimeout
	}
	up := time.Now()
	err = cl.DoStream(req, resp, timeout)
	c.upDur = time.Since(up)
	fasthttp.ReleaseRequest(req)
	c.bodySent = err == nil
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		status, code := gate.Status(err)
		if errors.Is(err, errBodyTooLarge) {
			status, code = fasthttp.StatusRequestEntityTooLarge, "request_too_large"
		}
		c.class, c.msg = code, upstream.Describe(err)
		gate.WriteError(ctx, status, "api_error", code, "passthrough upstream failed: "+c.msg)
		if status == fasthttp.StatusRequestEntityTooLarge {
			ctx.SetConnectionClose()
		}
		return false
	}
	c.ttfb = time.Since(c.start)
	c.status = resp.StatusCode()
	gate.CopyResponseHeaders(&ctx.Response.Header, &resp.Header)
	c.lim.SetHeaders(&ctx.Response.Header)
	if c.guard && len(c.e.Chain.Output) > 0 {
		h.outputPolicy(ctx, c, resp, timeout)
		return false
	}
	c.resp, c.stream = resp, true
	c.relay = bodyRelay{c: c, src: resp.BodyStream()}
	upstream.SetIdleHook(resp, keepReading, timeout)
	size := resp.Header.ContentLength()
	if size < 0 || resp.Header.ContentType() != nil && sse.IsEventStream(resp.Header.ContentType()) {
		size = -1 // chunked: each upstream read leaves at once (fasthttp flushes every chunk)
	}
	ctx.Response.SetBodyStream(&c.relay, size)
	return true
}

// keepReading is the idle hook of a relayed answer: it only arms the gap
// timeout (SetIdleHook); the listener reports a caller that left through
// the body stream's CloseWithError.
func keepReading() bool { return true }

// bodyRelay is the caller's response body: the upstream's body stream,
// read by the listener as it writes (nothing is held in between). Its
// CloseWithError, called by the listener once the answer is written or
// failed, finishes the request.
type bodyRelay struct {
	c   *call
	src io.Reader
	eof bool
	err bool // the upstream read failed (recorded)
}

func (b *bodyRelay) Read(p []byte) (int, error) {
	if b.src == nil {
		b.eof = true
		return 0, io.EOF
	}
	n, err := b.src.Read(p)
	b.c.respN += int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil && !b.err:
		b.err = true
		b.c.status, _ = gate.Status(err)
		b.c.class, b.c.msg = "stream_error", upstream.Describe(err)
	}
	return n, err
}

// CloseWithError ends the relay: err is the listener's write error (the
// caller left) or nil. fasthttp calls it exactly once (it would call an
// io.Closer's Close as well: bodyRelay deliberately has none).
func (b *bodyRelay) CloseWithError(err error) error {
	c := b.c
	if !b.err && (err != nil || !b.eof) {
		c.status, c.class = 499, "client_gone" // the caller left mid-answer
	}
	resp := c.resp
	upstream.SetIdleHook(resp, nil, 0)
	upstream.CloseStream(resp)
	fasthttp.ReleaseResponse(resp)
	c.resp = nil
	c.h.finish(c)
	return nil
}

// finish records the request (metrics, usage) and releases c.
func (h *Handler) finish(c *call) {
	now := time.Now()
	requests.Inc(c.route.Name, c.status)
	latency.Update(now.Sub(c.start).Seconds())
	if h.Usage != nil && c.caller != nil {
		k := c.caller.Key
		ev := usage.Record{
			OccurredAt: now, RequestID: usage.NewRequestID(), Attempt: 1, AttemptKind: usage.AttemptFinal,
			StatusCode: c.status, ErrorClass: c.class, ErrorMessage: c.msg,
			APIKeyID: k.ID, APIKeyName: k.DisplayName, TeamID: k.TeamID, UserID: k.UserID, UserName: k.UserName,
			Model: c.route.Name, InboundProtocol: Protocol, Operation: operation(c),
			CacheStatus: usage.CacheNone, Stream: c.stream,
			Latency: now.Sub(c.start), TTFT: c.ttfb, UpstreamLatency: c.upDur,
			RequestBodyBytes: c.reqN, ResponseBodyBytes: c.respN,
		}
		if pk := c.route.ProviderKey; pk != nil {
			ev.Provider, ev.ProviderKey, ev.ProviderKeyID = pk.Provider, pk.DisplayName, pk.ID
			if pk.TelemetryTags != (resources.TelemetryTags{}) {
				ev.Tags = &pk.TelemetryTags
			}
		}
		if c.guard {
			o := &c.e.Outcome
			usage.SetGuardrails(&ev, o.Applied, o.Enforced, o.Monitor, o.BypassedReason, o.BlockedFailClosed)
		}
		h.Usage.Emit(&ev)
	}
	c.reset()
	callPool.Put(c)
}

// operation is the record's operation: "passthrough." and the lowercase
// method, from a fixed set (no per-request string).
func operation(c *call) string {
	for i, m := range resources.PassthroughMethods {
		if m == c.method {
			return operations[i]
		}
	}
	return "passthrough"
}

var operations = func() []string {
	out := make([]string, len(resources.PassthroughMethods))
	for i, m := range resources.PassthroughMethods {
		out[i] = "passthrough." + strings.ToLower(m)
	}
	return out
}()

var errBodyTooLarge = errors.New("the request body exceeds the passthrough limit (server.max_upload_bytes)")

// limitReader fails once more than n bytes were read.
type limitReader struct {
	r    io.Reader
	n    int64
	read *int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	k, err := l.r.Read(p)
	*l.read += int64(k)
	if *l.read > l.n {
		return k, errBodyTooLarge
	}
	return k, err
}

func (h *Handler) maxBody() int64 {
	if h.MaxBodyBytes > 0 {
		return h.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

// ctxBackground is the guardrails' context: the request's own deadline is
// the upstream timeout, which starts after them.
var ctxBackground = context.Background()

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}
