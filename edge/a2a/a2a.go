// Package a2a serves the A2A agents of a2a_agents behind gw (spec
// "Remaining collections", "Authentication" 4): /a2a/{agent} relays the
// agent's JSON-RPC methods (message/send answered whole, message/stream
// and tasks/resubscribe relayed event by event as they arrive), its agent
// card is served from agent_card_path with gw's address in place of the
// agent's, and /a2a lists the agents the caller may reach. Callers
// authenticate as for model traffic; allowed_agents grants access; every
// call writes one usage record (inbound_protocol a2a).
//
// gw relays the JSON-RPC bytes as they are and reads only the framing
// (jsonrpc, method, id): it does not need the A2A types, so no A2A SDK is
// imported (docs/DEPENDENCIES.md).
package a2a

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
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
	"gw/sse/rawjson"
)

// Protocol is the usage records' inbound_protocol.
const Protocol = "a2a"

// Prefix is the path every A2A request starts with.
const Prefix = "/a2a"

var (
	requests = gate.NewCounters("gw_a2a_requests_total", "agent")
	latency  = metrics.NewPrometheusHistogram(`gw_a2a_request_duration_seconds`)
	events   = metrics.NewCounter(`gw_a2a_stream_events_total`)
)

// Card paths an A2A client may ask under an agent's gw address.
var cardPaths = [...]string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

// Handler serves /a2a from the active snapshot.
type Handler struct {
	// Usage receives one record per call; nil: none.
	Usage *usage.Pipeline
	// Limiter charges JSON-RPC calls to the caller key's rate_limit and
	// the matching rate_limit_policies; nil: no limits.
	Limiter *limiter.Limiter
	// Logger receives guardrail check errors; nil: slog.Default.
	Logger *slog.Logger

	mu      sync.Mutex
	snap    *snapshot.Snapshot
	clients map[*resources.A2AAgent]*upstream.Client
}

// Serve answers ctx, whose path is Prefix or below it.
func (h *Handler) Serve(ctx *fasthttp.RequestCtx, snap *snapshot.Snapshot) {
	c := callPool.Get().(*call)
	c.h, c.start, c.snap = h, time.Now(), snap
	if h.serve(ctx, c) {
		return // the event stream finishes c
	}
	c.status = ctx.Response.StatusCode()
	h.finish(c)
}

type call struct {
	h      *Handler
	start  time.Time
	snap   *snapshot.Snapshot
	agent  *resources.A2AAgent
	caller *snapshot.Caller
	op     string
	status int
	class  string
	msg    string
	stream bool
	ttfb   time.Duration
	upDur  time.Duration
	reqN   int64
	respN  int64
	resp   *fasthttp.Response
	out    []byte
	id     []byte // the JSON-RPC request's id (raw)
	lim    gate.Limits
	gOn    bool // a guardrail chain applies (g holds it)
	g      guard.Exec
	tx     Texts
	edit   []byte // a masked document
	held   []byte // an answer read whole for its guardrails
}

var callPool = sync.Pool{New: func() any { return new(call) }}

func (c *call) release() {
	keep := func(b []byte) []byte {
		if cap(b) > 64<<10 {
			return nil
		}
		return b[:0]
	}
	c.h.lim(c)
	if c.gOn {
		c.g.Reset()
	}
	c.tx.t.reset()
	c.h, c.snap, c.agent, c.caller, c.resp = nil, nil, nil, nil, nil
	c.op, c.status, c.class, c.msg, c.stream, c.gOn = "", 0, "", "", false, false
	c.ttfb, c.upDur, c.reqN, c.respN = 0, 0, 0, 0
	c.out, c.id, c.edit, c.held = keep(c.out), c.id[:0], keep(c.edit), keep(c.held)
	callPool.Put(c)
}

// lim releases c's rate limit charge.
func (h *Handler) lim(c *call) { c.lim.Release(h.Limiter) }

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// chain merges the guardrails attached to the caller key and its team.
func (h *Handler) chain(c *call) {
	kg, tg := c.caller.Guard, c.caller.TeamGuard
	if kg == nil && tg == nil {
		return // Fast path - nothing attached.
	}
	c.gOn = guard.Merge(&c.g.Chain, guard.Of(kg), guard.Of(tg), nil)
}

// writeRPC answers a JSON-RPC document (gw's own error) with status.
func writeRPC(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// split parses Prefix{/name{/rest}}: name "" for Prefix itself.
func split(path []byte) (name, rest []byte) {
	p := path[len(Prefix):]
	if len(p) == 0 || (len(p) == 1 && p[0] == '/') {
		return nil, nil
	}
	p = p[1:]
	if i := strings.IndexByte(string(p), '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, nil
}

func agentByName(snap *snapshot.Snapshot, name []byte) *resources.A2AAgent {
	for _, a := range snap.Resources.A2AAgents {
		if a.Name == string(name) {
			return a
		}
	}
	return nil
}

func (h *Handler) serve(ctx *fasthttp.RequestCtx, c *call) bool {
	name, rest := split(ctx.Path())
	if c.caller = gate.Authenticate(ctx, c.snap, c.start, nil); c.caller == nil {
		c.class = "unauthorized"
		return false
	}
	if name == nil {
		if !ctx.IsGet() {
			methodNotAllowed(ctx, "GET")
			return false
		}
		c.op = "agents/list"
		h.list(ctx, c)
		return false
	}
	a := agentByName(c.snap, name)
	if a == nil {
		gate.WriteError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "agent_not_found", "unknown A2A agent")
		c.class = "agent_not_found"
		return false
	}
	c.agent = a
	if !gate.Granted(c.caller.Key.AllowedAgents, a.Name) {
		gate.WriteError(ctx, fasthttp.StatusForbidden, "permission_error", "agent_not_allowed",
			"This key may not use A2A agent `"+a.Name+"`.")
		c.class = "agent_not_allowed"
		return false
	}
	cl, err := h.client(c.snap, a)
	if err != nil {
		gate.WriteError(ctx, fasthttp.StatusBadGateway, "api_error", "upstream_error", "cannot reach the agent: "+err.Error())
		c.class = "upstream_error"
		return false
	}
	switch {
	case len(rest) == 0 || (len(rest) == 1 && rest[0] == '/'):
		if ctx.IsGet() { // the card at the agent's own address, for convenience
			h.card(ctx, c, cl)
			return false
		}
		if !ctx.IsPost() {
			methodNotAllowed(ctx, "GET, POST")
			return false
		}
		return h.rpc(ctx, c, cl)
	case string(rest) == cardPaths[0] || string(rest) == cardPaths[1]:
		if !ctx.IsGet() {
			methodNotAllowed(ctx, "GET")
			return false
		}
		h.card(ctx, c, cl)
		return false
	}
	gate.WriteError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found",
		"A2A agents answer JSON-RPC at /a2a/{agent} and their card at /a2a/{agent}/.well-known/agent-card.json")
	c.class = "not_found"
	return false
}

func methodNotAllowed(ctx *fasthttp.RequestCtx, allow string) {
	gate.WriteError(ctx, fasthttp.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "use "+allow)
	ctx.Response.Header.Set("Allow", allow)
}

// client returns the agent's upstream client, building the snapshot's
// clients on its first A2A request.
func (h *Handler) client(snap *snapshot.Snapshot, a *resources.A2AAgent) (*upstream.Client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.snap != snap {
		h.snap, h.clients = snap, map[*resources.A2AAgent]*upstream.Client{}
	}
	if cl := h.clients[a]; cl != nil {
		return cl, nil
	}
	if snap.Options.Pool == nil {
		return nil, errors.New("no upstream pool")
	}
	cl, err := snap.Options.Pool.Client(upstream.Target{BaseURL: a.URL, TLS: upstream.TLS{Verify: true}})
	if err != nil {
		return nil, err
	}
	h.clients[a] = cl
	return cl, nil
}

// gwURL is the agent's address at gw as the caller reached gw.
func gwURL(ctx *fasthttp.RequestCtx, a *resources.A2AAgent) string {
	scheme := "http://"
	if ctx.IsTLS() {
		scheme = "https://"
	}
	return scheme + string(ctx.Host()) + Prefix + "/" + a.Name
}

// setAgentHeaders sets the agent's configured headers on an upstream request.
func setAgentHeaders(req *fasthttp.Request, a *resources.A2AAgent) {
	for _, hd := range a.Headers {
		req.Header.Set(hd.Name, hd.Value.Reveal())
	}
}

// card fetches the agent card from agent_card_path and serves it with gw's
// address (RewriteCard).
func (h *Handler) card(ctx *fasthttp.RequestCtx, c *call, cl *upstream.Client) {
	c.op = OperationCard
	a := c.agent
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(a.AgentCardURL())
	req.Header.SetMethod(fasthttp.MethodGet)
	req.Header.Set("Accept", "application/json")
	setAgentHeaders(req, a)
	up := time.Now()
	err := cl.Do(req, resp, a.Timeout())
	c.upDur = time.Since(up)
	if err != nil {
		status, code := gate.Status(err)
		c.class, c.msg = code, upstream.Describe(err)
		gate.WriteError(ctx, status, "api_error", code, "cannot fetch the agent card: "+c.msg)
		return
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		c.class, c.msg = "upstream_error", "agent card answered "+fasthttp.StatusMessage(resp.StatusCode())
		gate.WriteError(ctx, fasthttp.StatusBadGateway, "api_error", "upstream_error", "cannot fetch the agent card: the agent answered "+
			itoa(resp.StatusCode()))
		return
	}
	out, err := RewriteCard(c.out[:0], resp.Body(), gwURL(ctx, a))
	c.out = out
	if err != nil {
		c.class, c.msg = "upstream_error", err.Error()
		gate.WriteError(ctx, fasthttp.StatusBadGateway, "api_error", "upstream_error", "cannot serve the agent card: "+err.Error())
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(out)
	c.respN = int64(len(out))
}

func itoa(n int) string { return strconv.Itoa(n) }

// list answers GET /a2a: the agents the caller may reach, with gw's
// address for each.
func (h *Handler) list(ctx *fasthttp.RequestCtx, c *call) {
	b := append(c.out[:0], `{"agents":[`...)
	n := 0
	for _, a := range c.snap.Resources.A2AAgents {
		if !gate.Granted(c.caller.Key.AllowedAgents, a.Name) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"name":`...)
		b = rawjson.AppendQuote(b, a.Name)
		if a.Description != "" {
			b = append(b, `,"description":`...)
			b = rawjson.AppendQuote(b, a.Description)
		}
		b = append(b, `,"url":`...)
		b = rawjson.AppendQuote(b, gwURL(ctx, a))
		b = append(b, `,"agent_card_url":`...)
		b = rawjson.AppendQuote(b, gwURL(ctx, a)+cardPaths[0])
		b = append(b, '}')
	}
	b = append(b, "]}\n"...)
	c.out = b
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// rpc relays one JSON-RPC call; true when a stream owns c now.
func (h *Handler) rpc(ctx *fasthttp.RequestCtx, c *call, cl *upstream.Client) bool {
	body := ctx.PostBody()
	c.reqN = int64(len(body))
	r, err := ParseRequest(body)
	if err != nil {
		code := CodeInvalidRequest
		if err == ErrParse {
			code = CodeParseError
		}
		c.op, c.class = OperationOther, "invalid_request"
		// JSON-RPC errors travel on HTTP 200 (A2A JSON-RPC binding).
		c.out = AppendError(c.out[:0], nil, code, err.Error())
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetContentType("application/json")
		ctx.SetBody(c.out)
		return false
	}
	c.op = operation(r.Method)
	c.id = append(c.id[:0], r.ID...)
	// A rate limit refusal is HTTP 429 (clients back off on it) whose body
	// is a JSON-RPC error, as edge/mcp answers a refused tools/call.
	if !c.lim.Admit(ctx, h.Limiter, c.snap.Resources.RateLimitPolicies, c.caller.Key, func(ctx *fasthttp.RequestCtx, status int, msg string) {
		c.out = AppendErrorData(c.out[:0], c.id, CodeRateLimited, msg, "rate_limit_exceeded")
		writeRPC(ctx, status, c.out)
	}) {
		c.class = "rate_limited"
		return false
	}
	h.chain(c)
	if c.gOn && len(c.g.Chain.Input) > 0 && (string(r.Method) == MethodSend || string(r.Method) == MethodStream) {
		switch d := h.judge(c, guard.Input, c.g.Chain.Input, body); d {
		case guard.Blocked, guard.Unavailable:
			// The A2A JSON-RPC binding answers errors as JSON-RPC error
			// objects on HTTP 200; a streaming method's caller reads an
			// event stream, so it gets the error as its one event.
			if streaming(r.Method) {
				b := append(c.out[:0], "data: "...)
				b, c.class = c.refusal(b, c.id, guard.Input, d)
				c.out = append(b, "\n\n"...)
				writeRPC(ctx, fasthttp.StatusOK, c.out)
				ctx.SetContentType("text/event-stream")
			} else {
				c.out, c.class = c.refusal(c.out[:0], c.id, guard.Input, d)
				writeRPC(ctx, fasthttp.StatusOK, c.out)
			}
			c.lim.SetHeaders(&ctx.Response.Header)
			return false
		case guard.Masked:
			body = c.edit // sent before c.edit is used again
		}
	}
	a := c.agent
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	req.SetRequestURI(a.URL)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	if streaming(r.Method) {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	// A2A extension negotiation is end to end; the caller's credentials
	// are gw's and never leave it.
	if v := ctx.Request.Header.Peek("X-A2A-Extensions"); len(v) > 0 {
		req.Header.SetBytesV("X-A2A-Extensions", v)
	}
	setAgentHeaders(req, a)
	req.SetBodyRaw(body)
	up := time.Now()
	err = cl.DoStream(req, resp, a.Timeout())
	c.upDur = time.Since(up)
	fasthttp.ReleaseRequest(req)
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		status, code := gate.Status(err)
		c.class, c.msg = code, upstream.Describe(err)
		gate.WriteError(ctx, status, "api_error", code, "the A2A agent failed: "+c.msg)
		return false
	}
	c.ttfb = time.Since(c.start)
	gate.CopyResponseHeaders(&ctx.Response.Header, &resp.Header)
	c.lim.SetHeaders(&ctx.Response.Header)
	if resp.StatusCode() >= 400 {
		c.class = "upstream_error"
	}
	c.resp = resp
	if c.gOn && len(c.g.Chain.Output) > 0 && !sse.IsEventStream(resp.Header.ContentType()) {
		return h.guardBody(ctx, c)
	}
	if sse.IsEventStream(resp.Header.ContentType()) {
		c.stream = true
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) { h.relayEvents(w, c) })
		return true
	}
	// A whole answer (message/send, tasks/get ...): relayed as it arrives.
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) { h.relayBody(w, c) })
	return true
}

// relayEvents writes each SSE event to the caller as soon as it is
// complete (sse.Reader), flushing after each one; the gap between events
// is bounded by the agent's timeout_ms.
//
// With output guardrails each event's text is judged before the event
// leaves (docs/AGENTS.md "A2A guardrails"): a mask rewrites the event, a
// block ends the stream with a JSON-RPC error event.
func (h *Handler) relayEvents(w *bufio.Writer, c *call) {
	resp := c.resp
	gap := c.agent.Timeout()
	var stages []*guard.Stage
	if c.gOn {
		stages = c.g.Chain.Output
	}
	rd := sse.AcquireReader(resp.BodyStream())
	for {
		upstream.SetReadDeadline(resp, time.Now().Add(gap))
		ev, err := rd.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.class, c.msg = "stream_error", upstream.Describe(err)
				c.status, _ = gate.Status(err)
			}
			break
		}
		raw, unterminated, stop := ev.Raw, ev.Unterminated, false
		if len(stages) > 0 && len(bytes.TrimSpace(ev.Data)) > 0 {
			switch d := h.judge(c, guard.Output, stages, ev.Data); d {
			case guard.Blocked, guard.Unavailable:
				b := append(c.out[:0], "data: "...)
				b, c.class = c.refusal(b, c.id, guard.Output, d)
				c.out = append(b, "\n\n"...)
				raw, unterminated, stop = c.out, false, true
			case guard.Masked:
				raw, unterminated = c.maskedEvent(&ev), false
			}
		}
		_, werr := w.Write(raw)
		if unterminated {
			_, werr = w.WriteString("\n\n")
		}
		if stop {
			_ = w.Flush()
			c.respN += int64(len(raw))
			break
		}
		if werr == nil {
			werr = w.Flush()
		}
		if werr != nil {
			c.class, c.status = "client_gone", 499
			break
		}
		c.respN += int64(len(raw))
		events.Inc()
	}
	sse.ReleaseReader(rd)
	h.closeStream(c)
}

func (h *Handler) relayBody(w *bufio.Writer, c *call) {
	resp := c.resp
	if len(c.held) > 0 { // read for a guardrail that let it pass unjudged
		if _, err := w.Write(c.held); err != nil || w.Flush() != nil {
			c.class, c.status = "client_gone", 499
			h.closeStream(c)
			return
		}
	}
	if bs := resp.BodyStream(); bs != nil {
		if cap(c.out) < 16<<10 {
			c.out = make([]byte, 16<<10)
		}
		c.out = c.out[:16<<10]
		n, err := gate.Relay(w, bs, resp, c.agent.Timeout(), c.out)
		c.respN = int64(len(c.held)) + n
		if err != nil {
			c.class, c.msg = "stream_error", upstream.Describe(err)
			c.status, _ = gate.Status(err)
		}
	}
	h.closeStream(c)
}

// maskedEvent is ev with its data replaced by the masked document (its id
// kept; its event name, a JSON-RPC stream's are unnamed, kept).
func (c *call) maskedEvent(ev *sse.Event) []byte {
	b := c.out[:0]
	if len(ev.Name) > 0 {
		b = append(append(append(b, "event: "...), ev.Name...), '\n')
	}
	if len(ev.ID) > 0 {
		b = append(append(append(b, "id: "...), ev.ID...), '\n')
	}
	b = append(b, "data: "...)
	for _, x := range c.edit {
		if x == '\n' || x == '\r' { // whitespace between JSON tokens: one data line
			x = ' '
		}
		b = append(b, x)
	}
	c.out = append(b, "\n\n"...)
	return c.out
}

// guardBody holds a whole answer (message/send, tasks/get ...) for the
// output guardrails, then answers it, its masked form or the JSON-RPC
// refusal; true when a stream owns c now. An answer longer than
// maxGuardedAnswer cannot be judged: the fail-open rules decide, and a
// pass relays it (what was held, then the rest as it arrives).
func (h *Handler) guardBody(ctx *fasthttp.RequestCtx, c *call) bool {
	resp := c.resp
	held, over, err := readHeld(c.held[:0], resp, c.agent.Timeout())
	c.held = held
	if err != nil {
		c.resp = nil
		upstream.CloseStream(resp)
		fasthttp.ReleaseResponse(resp)
		status, code := gate.Status(err)
		c.class, c.msg = code, upstream.Describe(err)
		gate.WriteError(ctx, status, "api_error", code, "the A2A agent's answer could not be read for its guardrails: "+c.msg)
		return false
	}
	var d guard.Decision
	if over {
		c.g.ClearTexts()
		d = c.g.Unreadable(guard.Output, c.g.Chain.Output)
	} else {
		d = h.judge(c, guard.Output, c.g.Chain.Output, held)
	}
	if d == guard.Pass && over {
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) { h.relayBody(w, c) })
		return true
	}
	c.resp = nil
	upstream.CloseStream(resp)
	fasthttp.ReleaseResponse(resp)
	switch d {
	case guard.Blocked, guard.Unavailable:
		c.out, c.class = c.refusal(c.out[:0], c.id, guard.Output, d)
		writeRPC(ctx, fasthttp.StatusOK, c.out)
		c.lim.SetHeaders(&ctx.Response.Header)
		c.respN = int64(len(c.out))
		return false
	case guard.Masked:
		held = c.edit
	}
	ctx.SetBody(held)
	c.respN = int64(len(held))
	return false
}

// readHeld reads resp's body into dst, at most maxGuardedAnswer bytes
// (over: more follows, unread), each read bounded by gap.
func readHeld(dst []byte, resp *fasthttp.Response, gap time.Duration) (b []byte, over bool, err error) {
	bs := resp.BodyStream()
	if bs == nil {
		return append(dst, resp.Body()...), false, nil
	}
	for {
		if len(dst) >= maxGuardedAnswer {
			return dst, true, nil
		}
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		if gap > 0 {
			upstream.SetReadDeadline(resp, time.Now().Add(gap))
		}
		n, rerr := bs.Read(dst[len(dst):min(cap(dst), maxGuardedAnswer)])
		dst = dst[:len(dst)+n]
		if rerr == io.EOF {
			return dst, false, nil
		}
		if rerr != nil {
			return dst, false, rerr
		}
	}
}

func (h *Handler) closeStream(c *call) {
	if c.status == 0 {
		c.status = c.resp.StatusCode()
	}
	upstream.CloseStream(c.resp)
	fasthttp.ReleaseResponse(c.resp)
	c.resp = nil
	h.finish(c)
}

// finish records the call (metrics, usage record) and releases c.
func (h *Handler) finish(c *call) {
	now := time.Now()
	name := ""
	if c.agent != nil {
		name = c.agent.Name
	}
	requests.Inc(name, c.status)
	latency.Update(now.Sub(c.start).Seconds())
	if h.Usage != nil && c.caller != nil {
		k := c.caller.Key
		op := c.op
		if op == "" {
			op = OperationOther
		}
		rec := &usage.Record{
			OccurredAt: now, RequestID: usage.NewRequestID(), Attempt: 1, AttemptKind: usage.AttemptFinal,
			StatusCode: c.status, ErrorClass: c.class, ErrorMessage: c.msg,
			APIKeyID: k.ID, APIKeyName: k.DisplayName, TeamID: k.TeamID, UserID: k.UserID, UserName: k.UserName,
			Model: name, InboundProtocol: Protocol, Operation: op, CacheStatus: usage.CacheNone, Stream: c.stream,
			Latency: now.Sub(c.start), TTFT: c.ttfb, UpstreamLatency: c.upDur,
			RequestBodyBytes: c.reqN, ResponseBodyBytes: c.respN,
		}
		if c.gOn {
			o := &c.g.Outcome
			usage.SetGuardrails(rec, o.Applied, o.Enforced, o.Monitor, o.BypassedReason, o.BlockedFailClosed)
		}
		h.Usage.Emit(rec)
	}
	c.release()
}
